"""What a run still owes: answer calls, judge calls and no-memory floor calls that failed and stay pending.

A failed call is recorded as failed, never as a result; the next run retries exactly those. These
counts make a command exit non-zero and head the report while anything is pending.
"""

from __future__ import annotations

from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import ANSWERS_FILE, load_answers, load_floor, load_judgements
from locomo_kit.scoring.calibration import CONFIG_PREFIX
from locomo_kit.scoring.judge import failed_runs


def failed_answers(run: RunFolder) -> int:
    """Questions of the run's latest answer configuration whose latest answer attempt failed."""

    records = list(run.records(ANSWERS_FILE))
    if not records:
        return 0
    key = records[-1]["config_key"]
    latest: dict[tuple, str] = {}
    for r in records:
        if r.get("config_key") == key:
            q = (r["sample_id"], int(r["question_index"]))
            if latest.get(q) != "ok":  # an ok answer is never undone by a later failure
                latest[q] = r.get("status", "ok")
    return sum(1 for s in latest.values() if s == "failed")


def incomplete_judgements(run: RunFolder) -> dict[str, tuple[int, int]]:
    """Per judge protocol: (questions with fewer valid judge runs than asked, failed calls pending),
    over the judgements of the run's latest answer configuration (under either gold key) and of the
    judge calibration set."""

    answers = load_answers(run)
    key = answers[0]["config_key"] if answers else None
    questions: dict[str, set] = {}
    calls: dict[str, int] = {}
    for j in load_judgements(run):
        of = str(j.get("answer_config_key", ""))
        calibration = of.startswith(CONFIG_PREFIX)
        if key is not None and not (of == key or of.startswith(key + "#") or calibration):
            continue
        p = j["protocol"]
        calls[p] = calls.get(p, 0) + len(failed_runs(j))
        if not calibration and j.get("n_ok", 0) < j.get("n_runs", 0):  # a question, under either gold key
            questions.setdefault(p, set()).add((j["sample_id"], int(j["question_index"])))
    out = {p: (len(questions.get(p, ())), calls.get(p, 0)) for p in set(calls) | set(questions)}
    return {p: v for p, v in out.items() if v[0] or v[1]}


def floor_gaps(run: RunFolder) -> int:
    """Questions of the run's no-memory floor (an LLM answerer's, measured by the answer stage) with no floor
    answer: their empty-context calls failed, or were never made."""
    floor = run.manifest().get("answer", {}).get("floor") or {}
    if not floor.get("keys"):
        return 0
    ok = sum(1 for r in load_floor(run, floor["keys"]).values() if r.get("status") == "ok")
    return max(0, int(floor.get("questions") or 0) - ok)


def pending_calls(run: RunFolder) -> list[str]:
    """Lines saying what is still failing (empty when nothing is pending)."""
    lines = []
    n = failed_answers(run)
    if n:
        lines.append(f"{n} question(s) have no answer: their answer calls failed; rerun the same command to retry "
                     "exactly those")
    n = floor_gaps(run)
    if n:
        lines.append(f"no-memory floor: {n} question(s) have no floor answer: their empty-context calls failed; rerun "
                     "the same command to retry exactly those")
    for protocol, (questions, calls) in incomplete_judgements(run).items():
        if calls:
            lines.append(f"judge ({protocol}): {calls} call(s) failed and are pending; {questions} question(s) have "
                         "fewer valid judge runs than asked; rerun the same command to retry exactly those calls")
    return lines
