"""The public API is what the notebooks use: every public package says what it exports (``__all__``, sorted,
in httpx's style) and the notebooks import only from ``locomo_kit`` and its public packages."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_PACKAGES = ["locomo_kit", "locomo_kit.cli", "locomo_kit.ingestion", "locomo_kit.llm", "locomo_kit.pipeline",
                   "locomo_kit.qa", "locomo_kit.reports", "locomo_kit.runs", "locomo_kit.scoring", "locomo_kit.systems",
                   "locomo_kit.testing", "locomo_kit.worker"]
FOUNDATION = ["locomo_kit.costs", "locomo_kit.data_fetch", "locomo_kit.dataset", "locomo_kit.outcome",
              "locomo_kit.paths", "locomo_kit.progress", "locomo_kit.settings"]


def public_names(module: ModuleType) -> list[str]:
    """Names defined in the package or re-exported from inside it (not its submodules, not what it merely
    imports from the standard library or third parties)."""
    inside = module.__name__.split(".")[0]
    names = []
    for name, value in vars(module).items():
        if name.startswith("_") and not (name == "__version__" and module.__name__ == inside):
            continue
        if isinstance(value, ModuleType):
            continue
        origin = getattr(value, "__module__", None)
        if isinstance(origin, str) and not (origin == inside or origin.startswith(inside + ".")):
            continue
        names.append(name)
    return sorted(names)


@pytest.mark.parametrize("name", PUBLIC_PACKAGES)
def test_all_is_the_sorted_public_names(name: str) -> None:
    module = importlib.import_module(name)
    assert sorted(module.__all__) == public_names(module)


def test_a_package_named_like_a_verb_is_the_package() -> None:
    import locomo_kit as lk
    import locomo_kit.reports as reports

    assert isinstance(reports, ModuleType) and callable(lk.report) and callable(lk.compare) and callable(lk.export)
    for verb in ("load", "retrieval", "ingest", "answer", "score", "judge", "report", "compare", "export"):
        assert not (ROOT / "locomo_kit" / f"{verb}.py").exists() and not (ROOT / "locomo_kit" / verb).is_dir()


def notebook_imports() -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "\n".join(line for line in "".join(cell["source"]).splitlines() if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.ImportFrom) and node.module:
                    found.append((path.name, node.module))
                elif isinstance(node, ast.Import):
                    found += [(path.name, alias.name) for alias in node.names]
    return found


def test_notebooks_import_only_the_public_api() -> None:
    allowed = set(PUBLIC_PACKAGES) | set(FOUNDATION)
    imports = notebook_imports()
    assert any(module.startswith("locomo_kit") for _, module in imports)
    deep = [f"{nb}: {module}" for nb, module in imports if module.startswith("locomo_kit") and module not in allowed]
    assert deep == []
