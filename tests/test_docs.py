"""The README and docs/: every ``locomo-kit`` command they show parses with the kit's real argparse
parser, every docs page is reachable from the README, every relative link (and its #anchor) exists,
and the README stays a five-minute read."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from locomo_kit.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 200

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`([^`\n]*\blocomo-kit [^`\n]*)`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# placeholders the docs use for values: RUN_ID, URL, N, PATH_OR_URL, A, <model>, ..., …
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]*|<[^>]*>|\.\.\.|…)$")
PLACEHOLDER_PART = re.compile(r"<[^>]*>|\b[A-Z][A-Z0-9_]*\b")
DUMMY = "1"  # stands for a placeholder value: a valid string, path, URL, count and budget alike


class ParseError(Exception):
    pass


def markdown_files() -> list[Path]:
    return [README] + sorted(DOCS.glob("*.md"))


def shown_commands(text: str) -> list[str]:
    """``locomo-kit ...`` as written in code blocks and inline code, from ``locomo-kit`` on, comments cut."""
    found = []
    for block in FENCE.findall(text):
        for line in block.splitlines():
            if re.search(r"\blocomo-kit\s+\S", line):
                found.append(line)
    found += INLINE.findall(FENCE.sub("", text))
    out = []
    for line in found:
        line = re.sub(r"\s#\s.*$", "", line)  # a shell comment
        start = re.search(r"(?:^|[\s/])locomo-kit\s", line)
        if start:
            out.append(line[start.end():].strip())
    return out


# A shown command is a small grammar: words, [optional groups], ``a | b`` alternatives inside a group,
# and ``a|b`` alternatives inside a word. Each variant picks one alternative at each choice point.

def _tokens(command: str) -> list[str]:
    spaced = command.replace("[", " [ ").replace("]", " ] ")
    try:
        return shlex.split(spaced)
    except ValueError as exc:
        raise ParseError(f"cannot split {command!r}: {exc}") from exc


def _group(tokens: list[str], i: int = 0, inner: bool = False) -> tuple[list, int]:
    """(alternatives, next index): a sequence split at top-level ``|`` tokens into alternatives."""
    alternatives, seq = [], []
    while i < len(tokens):
        t = tokens[i]
        if t == "[":
            sub, i = _group(tokens, i + 1, inner=True)
            seq.append(("group", sub))
            continue
        if t == "]":
            if not inner:
                raise ParseError("unbalanced ]")
            alternatives.append(seq)
            return alternatives, i + 1
        if t == "|":
            alternatives.append(seq)
            seq = []
        else:
            seq.append(("word", t.split("|") if "|" in t and not t.startswith("-") else [t]))
        i += 1
    if inner:
        raise ParseError("unbalanced [")
    alternatives.append(seq)
    return alternatives, i


def _choice_points(alternatives: list, path: tuple = ()) -> list[tuple[tuple, int]]:
    points = [(path, len(alternatives))] if len(alternatives) > 1 else []
    for a, seq in enumerate(alternatives):
        for n, (kind, value) in enumerate(seq):
            if kind == "group":
                points += _choice_points(value, path + (a, n))
            elif len(value) > 1:
                points.append((path + (a, n), len(value)))
    return points


def _expand(alternatives: list, pick: dict, path: tuple = ()) -> list[str]:
    seq = alternatives[pick.get(path, 0)]
    a = pick.get(path, 0)
    words: list[str] = []
    for n, (kind, value) in enumerate(seq):
        here = path + (a, n)
        if kind == "group":
            inner = _expand(value, pick, here)
            # [RUN OPTIONS], [RUN …], [RUN_ID]: an optional placeholder, left out
            if all(PLACEHOLDER.match(w) for w in inner):
                continue
            words += inner
        else:
            words.append(value[pick.get(here, 0)])
    return words


def argv_variants(command: str) -> list[list[str]]:
    """Concrete argv lists for a shown command: one per alternative, placeholders replaced by a dummy."""
    tree, _ = _group(_tokens(command))
    picks = [{}] + [{point: i} for point, n in _choice_points(tree) for i in range(1, n)]
    variants = []
    for pick in picks:
        argv = []
        for w in _expand(tree, pick):
            if w in ("...", "…"):
                if argv and argv[-1].startswith("-"):
                    argv.append(DUMMY)  # --worker-url ...: the value elided
                continue
            if PLACEHOLDER.match(w):
                argv.append(DUMMY)
            elif not w.startswith("-"):
                argv.append(PLACEHOLDER_PART.sub(DUMMY, w) if re.search(r"<[^>]*>|/[A-Z]\b", w) else w)
            else:
                argv.append(w)
        if argv not in variants:
            variants.append(argv)
    return variants


def parse(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> argparse.Namespace:
    def error(self: argparse.ArgumentParser, message: str):
        raise ParseError(f"{self.prog}: {message}")

    monkeypatch.setattr(argparse.ArgumentParser, "error", error)
    return build_parser().parse_args(argv)


ALL_COMMANDS = [(path.relative_to(ROOT).as_posix(), command)
                for path in markdown_files() for command in shown_commands(path.read_text(encoding="utf-8"))]


def test_the_docs_show_commands():
    pages = {page for page, _ in ALL_COMMANDS}
    assert len(ALL_COMMANDS) >= 15, ALL_COMMANDS
    assert {"README.md", "docs/cli.md", "docs/claude-mem.md"} <= pages


@pytest.mark.parametrize("page,command", ALL_COMMANDS, ids=[f"{p}: {c[:60]}" for p, c in ALL_COMMANDS])
def test_shown_command_parses(page: str, command: str, monkeypatch: pytest.MonkeyPatch):
    for argv in argv_variants(command):
        try:
            args = parse(argv, monkeypatch)
        except ParseError as exc:
            pytest.fail(f"{page}: `locomo-kit {command}` does not parse as {argv}: {exc}")
        assert callable(args.func)


@pytest.mark.parametrize("command", [
    "run --no-such-flag",
    "frobnicate --sample conv-26",
    "run --mode transcript|paragraphs",
    "score --judge-protocol playbook|lenient",
    "data fetch [--source PATH] [--frobnicate]",
    "export [RUN_ID] --format csv|xlsx",
    "run [--context-budget 1000 | --top-k zero]",
])
def test_the_checker_rejects_what_the_parser_rejects(command: str, monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(ParseError):
        for argv in argv_variants(command):
            parse(argv, monkeypatch)


def test_the_checker_reads_placeholders_and_alternatives():
    assert argv_variants("export [RUN_ID] --format csv|parquet [--output PATH]") == [
        ["export", "--format", "csv", "--output", "1"], ["export", "--format", "parquet", "--output", "1"]]
    assert argv_variants("run --sample conv-26 [--context-budget 1000 | --top-k 8] [--paid]") == [
        ["run", "--sample", "conv-26", "--context-budget", "1000", "--paid"],
        ["run", "--sample", "conv-26", "--top-k", "8", "--paid"]]
    assert argv_variants("verify --worker-url ... --answer-model openai/<model>") == [
        ["verify", "--worker-url", "1", "--answer-model", "openai/1"]]
    assert argv_variants("compare RUN RUN [RUN …] --gold audited") == [["compare", "1", "1", "--gold", "audited"]]
    assert shown_commands("run `ANTHROPIC_API_KEY=… .venv/bin/locomo-kit run --paid` then\n```bash\n"
                          ".venv/bin/locomo-kit stats   # the statistics\nmake run\n```\n") == ["stats", "run --paid"]


# --- links

def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def links(path: Path) -> list[tuple[Path, str]]:
    """(target file, anchor) of every relative link in a page (http(s) and mailto links left out)."""
    out = []
    for target in LINK.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        out.append(((path.parent / file).resolve() if file else path.resolve(), anchor))
    return out


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: p.name)
def test_every_link_resolves(page: Path):
    for target, anchor in links(page):
        assert target.exists(), f"{page.name} links to {target.relative_to(ROOT)}, which does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in anchors(target), (f"{page.name} links to {target.name}#{anchor}, which has no such "
                                               f"heading (it has: {sorted(anchors(target))})")


def test_every_docs_page_is_reachable_from_the_readme():
    reached, todo = set(), [README.resolve()]
    while todo:
        page = todo.pop()
        if page in reached:
            continue
        reached.add(page)
        todo += [t for t, _ in links(page) if t.suffix == ".md" and t.exists()]
    orphans = [p.name for p in DOCS.glob("*.md") if p.resolve() not in reached]
    assert not orphans, f"docs pages no link from README.md reaches: {orphans} (add a link line to README.md)"


def test_the_readme_is_a_five_minute_read():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES, (
        f"README.md has {len(text.splitlines())} lines (at most {README_MAX_LINES}): move detail to a docs/ page")
    assert "make run" in text and "make test" in text
    assert any("make run" in block and "make test" in block for block in FENCE.findall(text)), \
        "README.md shows the two commands in a code block"


# --- docs/cli.md names every command and option (as sqlite-utils checks its docs against its CLI)

CLI_DOC = DOCS / "cli.md"


def commands_and_options(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, its option strings) for the parser and every subcommand below it, -h/--help left out."""
    options = [s for a in parser._actions
               if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) for s in a.option_strings]
    yield path, options
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands_and_options(sub, path + (name,))


CLI_TREE = list(commands_and_options(build_parser()))


def test_the_cli_walk_sees_every_command():
    names = {" ".join(path) for path, _ in CLI_TREE}
    assert {"run", "data fetch", "systems", "leaderboard", "import"} <= names
    assert ("run", ) in {path for path, _ in CLI_TREE}
    assert "--context-budget" in dict(CLI_TREE)[("run",)]


@pytest.mark.parametrize("path", [p for p, _ in CLI_TREE if p], ids=lambda p: " ".join(p))
def test_cli_doc_shows_every_command(path: tuple[str, ...]):
    text = CLI_DOC.read_text(encoding="utf-8")
    shown = re.search(r"locomo-kit\s+" + r"\s+".join(map(re.escape, path)) + r"(?![\w-])", text)
    assert shown, f"docs/cli.md never shows `locomo-kit {' '.join(path)}`: add it (what it does, an example)"


@pytest.mark.parametrize("path,options", CLI_TREE, ids=[" ".join(("locomo-kit",) + p) for p, _ in CLI_TREE])
def test_cli_doc_names_every_option(path: tuple[str, ...], options: list[str]):
    text = CLI_DOC.read_text(encoding="utf-8")
    missing = [o for o in options if not re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", text)]
    assert not missing, f"docs/cli.md never names {missing} (options of `locomo-kit {' '.join(path)}`): document them"


# --- what the repository's text files must not hold: issue numbers and paths out of the checkout

SCANNED = ["README.md", "Makefile", "pyproject.toml", "conftest.py", ".ci", "data/README.md", "docs", "locomo_kit",
           "memworker", "tests", "benchmarks", "scripts", "notebooks"]
TEXT_SUFFIXES = {"", ".py", ".md", ".toml", ".json", ".ipynb", ".txt", ".j2", ".js", ".css", ".html", ".sh", ".cfg"}
SKIPPED_DIRS = {"__pycache__", "node_modules", ".venv", ".pytest_cache"}
# written in pieces, so that this file does not match its own patterns
ISSUE_NUMBER = re.compile(r"\b(?:issue|pull request)s?\s*" + "#?" + r"\d+\b|\(" + "#" + r"\d+\)", re.I)
SHARED_PATH = re.compile(r"\.\./" + "shared/" + r"|parent\s*/\s*[\"']" + "shared" + r"[\"']")  # a path into it
# the one place that may point at the developers' shared data folder: CI's script, setting LOCOMO_* variables
SHARED_PATH_ALLOWED = {".ci/run", "tests/conftest.py"}


def repository_text_files() -> list[Path]:
    out = []
    for entry in SCANNED:
        path = ROOT / entry
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []
        out += [p for p in files if p.suffix in TEXT_SUFFIXES and not SKIPPED_DIRS & set(p.parts)]
    return out


def offending_lines(pattern: re.Pattern, allowed: set[str] = frozenset()) -> list[str]:
    found = []
    for path in repository_text_files():
        rel = path.relative_to(ROOT).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if pattern.search(line) and not (rel in allowed and "LOCOMO_" in line):
                found.append(f"{rel}:{n}: {line.strip()[:120]}")
    return found


def test_the_scan_reads_the_repository():
    names = {p.relative_to(ROOT).as_posix() for p in repository_text_files()}
    assert {"README.md", "docs/cli.md", "locomo_kit/cli/main.py", "tests/test_docs.py"} <= names
    issue = "issue"
    assert ISSUE_NUMBER.search(f"as {issue} #7 says") and ISSUE_NUMBER.search("(" + "#12)")
    assert ISSUE_NUMBER.search(f"{issue.title()} 3") and ISSUE_NUMBER.search(f"{issue}s 20")
    assert not ISSUE_NUMBER.search("#12 of 30") and not ISSUE_NUMBER.search("color: #333")
    assert SHARED_PATH.search("see " + "../" + "shared/docs") and SHARED_PATH.search("ROOT.parent / 'sh" + "ared'")


def test_no_issue_numbers():
    found = offending_lines(ISSUE_NUMBER)
    assert not found, ("issue numbers mean nothing to a user: say what the text means instead (a public URL for a "
                       "source):\n" + "\n".join(found))


def test_no_paths_out_of_the_checkout():
    found = offending_lines(SHARED_PATH, SHARED_PATH_ALLOWED)
    assert not found, ("a user's checkout has no shared folder beside it: read data through the LOCOMO_* variables "
                       "(only .ci/run and tests/conftest.py set them from there):\n" + "\n".join(found))
