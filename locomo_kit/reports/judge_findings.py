"""What judging found, said where it is seen: J per protocol with its interval and the
calibration's false-accept rates on the console, and the reasons J cannot be trusted (a judge
that is also the answerer; a calibration showing it accepts vague non-answers) for the banner at
the top of the report.

Both read a run summary (:func:`locomo_kit.reports.summary.summarize_run`).
"""

from __future__ import annotations

from locomo_kit.reports.numbers import interval, num
from locomo_kit.reports.summary import judge_tables
from locomo_kit.runs.records import load_answers, load_judgements
from locomo_kit.scoring.calibration import calibration_rates

VAGUE_FALSE_ACCEPT_LIMIT = 30.0  # % of vague-topical non-answers accepted above which J is unreliable
SCALE = {"playbook": "0-100", "mem0": "% correct", "strict": "% correct"}


def _overall(rows: list[dict]) -> dict | None:
    return next((r for r in rows if r.get("category") == "overall"), None)


def console_lines(summary: dict) -> list[str]:
    """One line per judged protocol (J overall with its 95% interval), one per calibration rate."""
    lines = []
    models = {p: m for p, m, _, _ in summary["judge"].get("models", [])}
    for protocol in ("mem0", "strict", "playbook"):
        row = _overall(summary["judge"].get(protocol) or [])
        if row:
            lines.append(f"J ({protocol}, {SCALE[protocol]}, judged by {models.get(protocol, '?')}): {num(row['mean'])} "
                         f"{interval(row.get('ci_low'), row.get('ci_high'))} over {row['count']} questions")
    for r in summary.get("calibration") or []:
        lines.append(f"calibration ({r['protocol']}, {r['judge_model']}): {r['kind']} answers {r['rate_name']} "
                     f"{num(r['rate'])}% of {r['items']} {interval(r['ci_low'], r['ci_high'])}")
    return lines + [f"WARNING: {reason}" for reason in concerns(summary)]


def concerns(summary: dict, limit: float = VAGUE_FALSE_ACCEPT_LIMIT) -> list[str]:
    """Why the run's J numbers are unreliable (empty when nothing is known against them)."""
    out = []
    answerer = summary.get("answerer")
    for protocol, model, _, _ in summary["judge"].get("models", []):
        if model == answerer:
            out.append(f"the judge ({protocol}) is {model}, which also gave the answers: a model grading its own "
                       "answers inflates J")
    for r in summary.get("calibration") or []:
        if r["kind"] == "vague-topical" and r["rate"] is not None and r["rate"] > limit:
            out.append(f"the judge {r['judge_model']} ({r['protocol']}) accepted {num(r['rate'], 0)}% of {r['items']} "
                       f"vague non-answers in the calibration set (above {num(limit, 0)}%): it rewards answers that are "
                       "on topic but wrong")
    return out


def run_summary(run) -> dict:
    """The part of a run summary these functions read, from the run's judgements alone (``score``
    prints it without building the whole report summary)."""

    answers = load_answers(run)
    key = answers[0]["config_key"] if answers else None
    every = load_judgements(run)
    mine = [j for j in every if j.get("answer_config_key") == key]
    return {"answerer": answers[0]["answerer"] if answers else None,
            "judge": {**judge_tables(mine),
                      "models": sorted({(j["protocol"], j["judge_model"], j["prompt_version"], j["n_runs"]) for j in mine})},
            "calibration": calibration_rates(every)}
