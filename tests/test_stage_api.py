"""One way to call a stage: the pipeline's functions take their subject by position and the rest by keyword
(settings objects), and the command line, the notebooks and the library name the same run for the same options.

The shape of the API is checked by reading the code with ``ast`` (every ``pipeline/`` function, and every call
into ``pipeline/`` in the kit, the notebooks, the tests, the benchmarks and the scripts); what it does, by
running it: the three ways in resolve one run id, and notebook 04 sends the answerer's calls and the judge's
calls each to its own server.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
from pathlib import Path
from typing import Iterator

import pytest

import locomo_kit as lk
from locomo_kit.cli import build_parser, main
from locomo_kit.runs import known_runs

from support.claude_mem_standin import serve
from support.llm_standins import Script, openai_app, openai_completion
from support.runs import offline_outputs

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "locomo_kit" / "pipeline"
MAX_PARAMETERS = 8


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def pipeline_functions() -> Iterator[tuple[str, ast.FunctionDef]]:
    for path in sorted(PIPELINE.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                yield f"{module_of(path)}.{node.name}", node


def test_every_pipeline_function_takes_its_subject_by_position_and_the_rest_by_keyword() -> None:
    wide, positional = [], []
    for name, node in pipeline_functions():
        a = node.args
        count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
        if count > MAX_PARAMETERS:
            wide.append(f"{name}: {count} parameters")
        if len(a.posonlyargs) + len(a.args) > 1 or a.vararg or a.kwarg:
            positional.append(f"{name}({', '.join(x.arg for x in a.posonlyargs + a.args)}, ...)")
    assert wide == [] and positional == []


def code_sources() -> Iterator[tuple[str, str, str | None]]:
    """(where, source, the module it is, if in the kit) for every Python file and notebook code cell the rule covers."""
    for folder in ("locomo_kit", "tests", "benchmarks", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield str(path.relative_to(ROOT)), path.read_text(), module_of(path) if folder == "locomo_kit" else None
    for path in sorted((ROOT / "scripts").iterdir()):
        if path.is_file() and path.suffix == "" and path.read_text(errors="replace").startswith("#!/usr/bin/env python"):
            yield str(path.relative_to(ROOT)), path.read_text(), None
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):  # its code cells share one namespace: one source
        lines = [line for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"
                 for line in "".join(cell["source"]).splitlines() + [""]]
        yield path.name, "\n".join(l for l in lines if not l.lstrip().startswith(("%", "!"))), None


def bound_names(tree: ast.AST, module: str | None) -> dict[str, str]:
    """Each imported (or, in a kit module, defined) name → the dotted path it stands for."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    names[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    if module:
        for node in getattr(tree, "body", []):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.setdefault(node.name, f"{module}.{node.name}")
    return names


def dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def target(path: str) -> object | None:
    """The object a dotted path names, when it is part of the kit."""
    if not path.startswith("locomo_kit"):
        return None
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def test_no_call_into_the_pipeline_passes_three_or_more_arguments_by_position() -> None:
    found, checked = [], 0
    for where, source, module in code_sources():
        tree = ast.parse(source)
        names = bound_names(tree, module)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not (name := dotted(node.func)):
                continue
            head, _, rest = name.partition(".")
            if head not in names:
                continue
            obj = target(names[head] + (f".{rest}" if rest else ""))
            origin = getattr(obj, "__module__", "") or ""
            if not origin.startswith("locomo_kit.pipeline"):
                continue
            checked += 1
            if len(node.args) >= 3 or any(isinstance(a, ast.Starred) for a in node.args):
                found.append(f"{where}:{node.lineno}: {name}(... {len(node.args)} by position)")
            elif callable(obj) and all(k.arg for k in node.keywords):  # the call binds to the signature
                try:
                    inspect.signature(obj).bind(*node.args, **{k.arg: k.value for k in node.keywords})
                except TypeError as exc:
                    found.append(f"{where}:{node.lineno}: {name}: {exc}")
                except ValueError:  # no signature to read (an exception class)
                    pass
    assert found == []
    assert checked > 50  # the walk finds the calls it is about (lk.answer, run_all, the CLI's, the notebooks')


def test_the_settings_are_frozen_documented_and_exported() -> None:
    from dataclasses import FrozenInstanceError, fields

    from locomo_kit import settings

    for cls in (lk.SystemSpec, lk.Retrieval, lk.Answerer, lk.Judge):
        assert cls.__name__ in lk.__all__ and cls.__module__ == settings.__name__
        documented = {n.targets[0].id if isinstance(n, ast.Assign) else n.target.id
                      for n, doc in zip(ast.parse(inspect.getsource(cls)).body[0].body,
                                        ast.parse(inspect.getsource(cls)).body[0].body[1:])
                      if isinstance(n, (ast.AnnAssign, ast.Assign)) and isinstance(doc, ast.Expr)
                      and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)}
        assert {f.name for f in fields(cls)} == documented, cls.__name__
        with pytest.raises(FrozenInstanceError):
            setattr(cls(), fields(cls)[0].name, None)
    with pytest.raises(ValueError, match="source must be one of"):
        lk.Answerer(source="memories")
    with pytest.raises(ValueError, match="judge protocol must be one of"):
        lk.Judge("anthropic/claude-sonnet-4-6", protocol="lenient")
    with pytest.raises(ValueError, match="query strategy must be one of"):
        lk.Retrieval(query_strategy="words")


def test_the_library_default_is_the_command_lines_run() -> None:
    assert lk.run_config("conv-26").run_id() == "conv-26-transcript-embedded-minilm-extractive-b1000-6f085058"
    args = build_parser().parse_args(["answer", "--sample", "conv-26"])
    from locomo_kit.cli.common import config_run

    assert config_run(args).run_id == lk.run_config("conv-26").run_id()


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory, dataset_path: Path) -> Iterator[Path]:
    with offline_outputs(tmp_path_factory.mktemp("outputs")) as folder:
        yield folder


def run_notebook(name: str, out: Path, **parameters) -> None:
    import papermill

    notebooks = ROOT / "notebooks"
    papermill.execute_notebook(str(notebooks / name), str(out), kernel_name="python3", progress_bar=False,
                               cwd=str(notebooks), parameters=parameters)


def test_the_library_notebook_03_and_the_command_line_answer_into_one_run(offline, tmp_path, capsys) -> None:
    assert main(["ingest", "--sample", "conv-26"]) == 0
    assert main(["answer", "--sample", "conv-26"]) == 0
    cli_run = Path(re.findall(r"^run folder: (\S+)$", capsys.readouterr().out, flags=re.M)[-1]).name
    run, summary = lk.answer("conv-26")
    assert run.run_id == cli_run and summary.answered == 0 and summary.skipped == 152
    run_notebook("03_qa.ipynb", tmp_path / "qa.ipynb")  # its defaults
    printed = [line for cell in json.loads((tmp_path / "qa.ipynb").read_text())["cells"]
               for o in cell.get("outputs", []) for line in "".join(o.get("text", "")).splitlines()]
    assert str(run.path) in printed and "answer ok: 0 questions done, 152 already done, 0 failed" in printed
    assert known_runs() == [cli_run] == [lk.run_config("conv-26").run_id()]


def test_an_unjudged_report_names_the_options_score_takes(offline, capsys) -> None:
    run = lk.RunFolder(lk.run_config("conv-26").run_id())
    if not run.exists():
        assert main(["run", "--sample", "conv-26"]) == 0
    lk.score(run)
    report, _, _ = lk.report(run)
    hint = next(line for line in report.read_text().splitlines() if line.startswith("Not judged"))
    options = re.findall(r"--[a-z-]+", hint)
    assert options == ["--judge-model", "--judge-base-url"]
    url = "http://127.0.0.1:9/v1"
    args = build_parser().parse_args(["score", "--sample", "conv-26", "--judge-model", "openai/m", options[1], url])
    assert args.judge_base_url == url and args.llm_base_url is None  # not what score refuses


def test_run_with_budgets_and_a_limit_reuses_its_own_runs(offline, capsys) -> None:
    argv = ["run", "--sample", "conv-30", "--context-budget", "500,1000", "--limit", "3"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert main(argv) == 0
    again = capsys.readouterr().out
    ids = re.findall(r"^context budget [\d,]+: (\S+)$", first, flags=re.M)
    assert len(ids) == 2 and all("-b500-q3-" in i or "-b1000-q3-" in i for i in ids)
    assert [f"context budget {b}: already done ({i}), not run again" for b, i in zip(("500", "1,000"), ids)] == \
        re.findall(r"^context budget [\d,]+: already done .*$", again, flags=re.M)
    assert "answer ok" not in again  # nothing was run again


def test_notebook_04_sends_the_answerer_and_the_judge_each_to_its_own_server(offline, tmp_path) -> None:
    answers = Script([(200, openai_completion("Caroline"))])
    verdicts = Script([(200, openai_completion(json.dumps({"explanation": "scripted", "label": "CORRECT"})))])
    with serve(openai_app(answers)) as answer_url, serve(openai_app(verdicts)) as judge_url:
        run_notebook("04_score.ipynb", tmp_path / "score.ipynb", sample="conv-30", answer_model="openai/answerer",
                     answer_base_url=answer_url + "/v1", judge_model="openai/judger", judge_base_url=judge_url + "/v1",
                     judge_protocol="mem0", judge_runs=1)
    assert len(answers.requests) >= 81 and {r["body"]["model"] for r in answers.requests} == {"answerer"}
    assert len(verdicts.requests) >= 81 and {r["body"]["model"] for r in verdicts.requests} == {"judger"}
    assert not any("Gold answer" in json.dumps(r["body"]) for r in answers.requests)
    run = lk.RunFolder(lk.run_config("conv-30", answerer=lk.Answerer("openai/answerer")).run_id())
    manifest = run.manifest()
    assert manifest["answer"]["server"] == answer_url + "/v1"
    assert manifest["judge"]["mem0"]["server"] == judge_url + "/v1"


def test_notebook_04_refuses_one_url_for_two_servers(offline, tmp_path) -> None:
    import papermill

    with pytest.raises(papermill.PapermillExecutionError, match="give the judge's server as judge_base_url"):
        run_notebook("04_score.ipynb", tmp_path / "one.ipynb", sample="conv-30", judge_model="openai/judger",
                     llm_base_url="http://127.0.0.1:9/v1")
