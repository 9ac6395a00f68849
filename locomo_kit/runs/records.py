"""The one place that knows a run folder's record files: their names, and the readers of what they hold.

``ingest.jsonl`` (one record per session, and a ``reset`` record per ``--force``), ``answers.jsonl``,
``scores.jsonl`` and ``judgements.jsonl`` are appended to by their stages, and ``floor.jsonl`` by the answer
stage of an LLM-answered run (its answerer's no-memory floor); every other module reads them through these
functions.
"""

from __future__ import annotations

from locomo_kit.runs.folder import RunFolder, ingestion_folder

INGEST_FILE = "ingest.jsonl"
ANSWERS_FILE = "answers.jsonl"
SCORES_FILE = "scores.jsonl"
JUDGEMENTS_FILE = "judgements.jsonl"
FLOOR_FILE = "floor.jsonl"
ZERO_OBSERVATIONS = "the Worker stored ZERO observations for this session"


def since_reset(run: RunFolder, sample_id: str, mode: str) -> list[dict]:
    """This sample's ingest records in this mode since its last reset, in order."""
    out: list[dict] = []
    for rec in run.records(INGEST_FILE):
        if rec.get("sample_id") != sample_id:
            continue
        if rec.get("kind") == "reset":
            out.clear()
        elif rec.get("mode") == mode:
            out.append(rec)
    return out


def done_sessions(run: RunFolder, sample_id: str, mode: str) -> dict[int, dict]:
    """Sessions recorded ``ok`` for this sample and mode since the last reset (a session that
    stored zero observations is not done: a rerun sends it again)."""
    return {int(rec["session"]): rec for rec in since_reset(run, sample_id, mode)
            if rec.get("status") == "ok" and rec.get("observations", 1) > 0}


def empty_sessions(run: RunFolder, sample_id: str, mode: str) -> set[int]:
    """Sessions whose latest record since the last reset says the Worker stored nothing for them."""
    latest = {int(rec["session"]): rec for rec in since_reset(run, sample_id, mode) if rec.get("kind") == "session"}
    return {n for n, r in latest.items() if r.get("status") == "failed" and ZERO_OBSERVATIONS in (r.get("error") or "")}


def generation(run: RunFolder, sample_id: str) -> str:
    """The id of the latest ``--force`` reset of this sample in this run ('' before any)."""
    gen = ""
    for rec in run.records(INGEST_FILE):
        if rec.get("sample_id") == sample_id and rec.get("kind") == "reset":
            gen = str(rec.get("generation") or "")
    return gen


def session_table(run: RunFolder, sample_id: str, mode: str) -> list[dict]:
    """The latest ``ok`` record per session, for display."""
    done = done_sessions(run, sample_id, mode)
    return [done[k] for k in sorted(done)]


def load_answers(run: RunFolder, config_key: str | None = None) -> list[dict]:
    """The latest ``ok`` answer per question (for one configuration key, or the run's latest one)."""
    recs = [r for r in run.records(ANSWERS_FILE) if r.get("status") == "ok"]
    if config_key is None and recs:
        config_key = recs[-1]["config_key"]
    latest: dict[tuple[str, int], dict] = {}
    for r in recs:
        if r["config_key"] == config_key:
            latest[(r["sample_id"], int(r["question_index"]))] = r
    return [latest[k] for k in sorted(latest, key=lambda k: (k[0], k[1]))]


def run_problems(run: RunFolder) -> list[str]:
    """Why a run whose stages all ended is still not a result (its report says so at the top): a system that
    lost writes it acknowledged, an incomplete ingestion, or no memory retrieved for any question. Empty when
    there is none."""
    ingestion_id = run.manifest().get("ingestion", {}).get("id")
    manifest = (ingestion_folder(ingestion_id) if ingestion_id else run).manifest()
    ingest = manifest.get("ingest", {})
    problems = []
    lost = (manifest.get("held_check") or {}).get("problem")
    if lost:
        problems.append(lost)
    if ingest and not ingest.get("succeeded", True) and not (lost and not ingest.get("failed")
                                                             and not ingest.get("not_attempted")):
        problems.append(f"ingestion incomplete ({ingest.get('failed', 0)} session(s) failed, "
                        f"{ingest.get('not_attempted', 0)} not attempted)")
    memory = [a for a in load_answers(run) if a.get("source") == "memory"]
    if memory and not any(a.get("retrieved") for a in memory):
        problems.append(f"no memory was retrieved for any of {len(memory)} questions")
    return problems


def load_scores(run: RunFolder, config_key: str | None = None, gold_key: str = "original") -> list[dict]:
    """Scores of one answer configuration (default: the latest) under one gold key."""
    recs = list(run.records(SCORES_FILE))
    if config_key is None and recs:
        config_key = recs[-1]["config_key"]
    return [r for r in recs if r["config_key"] == config_key and r.get("gold_key", "original") == gold_key]


def judgement_key(j: dict) -> tuple:
    """What makes a judgement the same one again: question, protocol, judge, prompt, answer config, runs."""
    return (j["sample_id"], int(j["question_index"]), j["protocol"], j["judge_model"], j["prompt_version"],
            j["answer_config_key"], j["n_runs"])


def latest_judgements(run: RunFolder) -> dict[tuple, dict]:
    """The latest judgement record per :func:`judgement_key`."""
    return {judgement_key(j): j for j in run.records(JUDGEMENTS_FILE)}


def load_judgements(run: RunFolder, protocol: str | None = None) -> list[dict]:
    """The latest judgement per (question, protocol, judge, prompt, answer config, runs)."""
    latest: dict[tuple, dict] = {}
    for j in run.records(JUDGEMENTS_FILE):
        if protocol is None or j["protocol"] == protocol:
            latest[judgement_key(j)] = j
    return list(latest.values())


def load_floor(run: RunFolder, floor_keys: dict[str, str] | None = None) -> dict[tuple[str, int], dict]:
    """The latest no-memory floor record per question (``ok`` or ``failed``; an ``ok`` one is never undone by a later
    failure), of each conversation's floor key in ``floor_keys`` (default: the keys the run's manifest names)."""
    if floor_keys is None:
        floor_keys = (run.manifest().get("answer", {}).get("floor") or {}).get("keys") or {}
    latest: dict[tuple[str, int], dict] = {}
    for r in run.records(FLOOR_FILE):
        if floor_keys.get(r.get("sample_id")) != r.get("floor_key"):
            continue
        q = (r["sample_id"], int(r["question_index"]))
        if latest.get(q, {}).get("status") != "ok":
            latest[q] = r
    return latest
