"""One convention for numbers in every report, page and table (locomo_kit.reports.numbers): a missing value (None,
NaN) is "–", thousands are separated, a difference carries its sign and zero none. Checked on the formatters, on
each writer of a table fed the worst values, and on the sources (no module formats a number its own way)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from locomo_kit.reports import numbers
from locomo_kit.reports.comparison import statements, table_lines
from locomo_kit.reports.curve import curve_lines
from locomo_kit.reports.flips import flip_lines
from locomo_kit.reports.html import render_markdown, render_page
from locomo_kit.reports.imported_board import imported_lines
from locomo_kit.reports.judge_findings import console_lines
from locomo_kit.reports.leaderboard_page import leaderboard_lines, paired_lines, quoted_lines
from locomo_kit.reports.numbers import interval, markdown_table, num, p_value, pct, signed, signed_interval
from locomo_kit.reports.sessions import session_lines
from locomo_kit.scoring.session_recall import SESSION_KS

ROOT = Path(__file__).resolve().parent.parent
NAN = math.nan


def test_the_convention():
    assert num(None) == num(NAN) == signed(None) == signed(NAN) == pct(None) == pct(NAN) == p_value(NAN) == "–"
    assert num(1540) == "1,540" and num(1282.06) == "1,282.1" and num(12345.678, 2) == "12,345.68"
    assert num(0.5) == "0.5" and num(-0.04) == "0.0" and num(-0.06) == "-0.1" and num(3, 2) == "3"
    assert num(True) == "True" and num("text") == "text" and num(123456.0, 0) == "123,456"
    assert signed(1.25) == "+1.2" and signed(-0.4) == "-0.4" and signed(0.04) == signed(-0.04) == "0.0"
    assert signed(-1234.5) == "-1,234.5" and pct(0.1234) == "12.3" and pct(12.5) == "1,250.0"
    assert interval(1.0, None) == "[1.0, –]" and signed_interval(-1.0, 2.0) == "[-1.0, +2.0]"
    assert p_value(0.00001) == "< 0.0001" and p_value(0.005) == "0.0050" and p_value(0.5) == "0.500"
    assert markdown_table(["a", "b"], [[NAN, 1234], ["x", None]]) == ["| a | b |", "|---|---|", "| – | 1,234 |",
                                                                       "| x | – |", ""]


def nan_free(lines: list[str]) -> str:
    text = "\n".join(lines)
    assert not re.search(r"\bnan\b|\bNone\b|\binf\b", text, re.I), text
    assert "–" in text
    return text


def test_a_missing_value_is_a_dash_in_every_table():
    row = {"system": "bm25 0.3.16", "status": "ok", "budget": 1000, "questions": 152, "evidence_recall": NAN,
           "recall@10": None, "session_recall@10": NAN, "session_recall@10_chance": None, "session_hit@5": NAN,
           "session_hit@5_chance": NAN, "sessions_retrieved": None, "locomo_f1": NAN, "mem0_f1": None, "j_mem0": NAN,
           "ingest_s": NAN, "search_p50_ms": None, "search_p95_ms": NAN, "context_tokens": NAN, "run_id": "r"}
    text = nan_free(leaderboard_lines([row]))
    assert "| bm25 0.3.16 | 1,000 | – |" in text
    nan_free(paired_lines([{"budget": 1000, "system": "b", "baseline": "a", "metric": "official F1 %", "n": 0,
                            "diff": NAN, "ci_low": NAN, "ci_high": None, "mdd": NAN, "verdict": "–"}]))
    nan_free(quoted_lines([{"system": "Mem0", "source": "https://arxiv.org/abs/2504.19413", "j_mem0": NAN,
                            "mem0_f1_by_category": {"1": NAN}, "search_p50_ms": None}]))
    nan_free(imported_lines([{"system": "s", "run_id": "r", "path": "p", "questions": 1, "coverage": "1 of 1,540",
                              "locomo_f1": NAN, "mem0_f1": NAN, "j_source": None, "j_kit": {"mem0": NAN}, "claim": NAN,
                              "answer_words": NAN, "answerer": "x", "judge": None, "question_set": [("conv-26", 0)]}]))
    result = {"runs": [{"run_id": "a"}, {"run_id": "b"}], "rows": [
        {"category": "overall", "name": "overall", "label": "official F1 %", "unit": "points", "n": 1,
         "means": [NAN, None], "comparisons": [{"run": "b", "baseline": "a", "diff": NAN, "ci_low": NAN,
                                                 "ci_high": NAN, "mdd": NAN, "verdict": "–"}]},
        {"category": "overall", "name": "overall", "label": "cost $", "unit": "$", "n": 1, "means": [NAN, 1234.5],
         "comparisons": [{"run": "b", "baseline": "a", "diff": NAN, "ci_low": None, "ci_high": NAN, "mdd": NAN,
                          "verdict": "–"}]}]}
    text = nan_free(table_lines(result))
    assert "1,234.50000" in text
    nan_free(statements(result))
    table = {"basis": "official F1 ≥ 0.5"}
    nan_free(flip_lines([{"run_a": "a", "run_b": "b", "gold": "original", "n": 0, "both": 0, "only_a": 0,
                          "only_b": 0, "neither": 0, "diff": None, "ci_low": NAN, "ci_high": NAN,
                          "mcnemar_p": NAN}], table))
    ks = {f"@{k}": None for k in SESSION_KS}
    nan_free(session_lines([{"category": "overall", "name": "overall",
                             "sessions": {"n": 3, "sessions_retrieved": NAN, "recall": ks, "chance_recall": ks,
                                          "hit": ks, "chance_hit": ks}}]))
    nan_free(curve_lines([{"system": "s", "budget": 1000, "questions": 1, "evidence_recall": NAN,
                           "session_recall@5": None, "locomo_f1": NAN, "mem0_f1": NAN, "context_tokens": NAN,
                           "run_id": "r"}]))
    nan_free(console_lines({"judge": {"models": [("mem0", "m", "p", 1)],
                                      "mem0": [{"category": "overall", "mean": NAN, "ci_low": NAN, "ci_high": None,
                                                "count": 0}]},
                            "calibration": [{"protocol": "mem0", "judge_model": "m", "kind": "gold",
                                             "rate_name": "accepted", "rate": NAN, "items": 0, "ci_low": NAN,
                                             "ci_high": NAN}]}))


def test_a_missing_value_is_a_dash_on_the_page_too(tmp_path):
    row = {"system": "s", "status": "ok", "budget": 1000, "evidence_recall": NAN, "session_recall@10": NAN,
           "session_recall@10_chance": NAN, "session_hit@5": NAN, "session_hit@5_chance": NAN}
    page = render_page("t", render_markdown("\n".join(leaderboard_lines([row])), tmp_path))
    cells = re.findall(r"<td>(.*?)</td>", page)
    assert cells and "–" in cells and not any(re.search(r"\bnan\b", c, re.I) for c in cells)


@pytest.mark.parametrize("folder", ["reports", "pipeline"])
def test_no_module_formats_a_number_its_own_way(folder):
    """Precision and sign are the formatters' (numbers.num, signed, pct, …): no f-string in reports/ or pipeline/
    writes a float with its own format spec (a precision, a sign)."""
    own = []
    for path in sorted((ROOT / "locomo_kit" / folder).rglob("*.py")):
        if path == Path(numbers.__file__):
            continue
        text = path.read_text(encoding="utf-8")
        own += [f"{path.name}: {m.group(0)}" for m in re.finditer(r"\{[^{}]*:[+ ]?,?\d*\.\d+[fe%]\}", text)]
    assert own == []
