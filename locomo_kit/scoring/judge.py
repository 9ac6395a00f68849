"""LLM-as-a-Judge (J), two named protocols (scoring.md §3). Judging reads saved answers only.

- ``playbook`` (the seed playbook's): a 0-100 score with a short explanation as JSON, four
  criteria, the category in the prompt, N runs per question (default 10; the playbook ran them in
  batches of 3, :func:`judge_answers` runs every call of every question through one shared pool).
  Parse order: JSON → a number in the text → -1 (a sentinel, excluded from aggregation, with the
  error kept). Per question: mean and *sample* standard deviation (ddof=1) of the valid runs; a
  warning when fewer than 5 runs succeeded.
- ``mem0`` (the Mem0 paper's): binary CORRECT/WRONG as JSON with a lenient ("be generous") prompt,
  paraphrased from Mem0's released code; J = % correct over categories 1-4, per run, then mean ±
  std across runs, both the sample std (ddof=1) and the population std (ddof=0, what published
  spreads use). Default 10 runs, as the Mem0 paper judged (its released code ran the judge once).

- ``strict`` (``judge_prompts.py``): binary like ``mem0``, with a strict prompt.

Temperature (0.5 for playbook, 0 for mem0 and strict) is only sent where the API version accepts it.

Execution (``judge_answers``): all pending runs of all questions go through
:func:`locomo_kit.llm.execute.execute` (cache, plan, preflight, shared pool or Message Batch). A call
that fails is kept in ``failed_runs`` (the judgement's ``status`` is ``incomplete``), never as a
score; the next run makes exactly those calls. An unparseable reply is a judge answer: the -1 sentinel.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from locomo_kit.llm import LLM, LLMError
from locomo_kit.llm.base import Completion, LLMRequest
from locomo_kit.llm.execute import CallSettings, execute
from locomo_kit.llm.pool import CallOutcome
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.runs.records import JUDGEMENTS_FILE, latest_judgements
from locomo_kit.scoring.judge_prompts import STRICT_PROMPT, STRICT_VERSION

PROTOCOLS = ("playbook", "mem0", "strict")
BINARY_PROTOCOLS = ("mem0", "strict")
MIN_OK_RUNS = 5
SENTINEL = -1.0
JUDGE_OUTPUT_TOKENS = {"playbook": 45, "mem0": 40, "strict": 40}  # typical reply length, for the cost plan

PLAYBOOK_VERSION = "judge-playbook-v1"
PLAYBOOK_SYSTEM = """You are a strict grader of answers to questions about a long conversation between two people.
Score the candidate answer against the gold answer from 0 to 100 on four criteria:
1. Factual accuracy: does it state the same facts as the gold answer?
2. Completeness: does it cover every part of the gold answer?
3. Relevance: does it answer the question that was asked, without unrelated content?
4. Contextual appropriateness: is it right for this question's category? Temporal questions need the
   exact date, period or order; multi-hop questions need every item.
Reply with JSON only: {"score": <0-100>, "explanation": "<one or two sentences>"}"""

MEM0_VERSION = "judge-mem0-paraphrase-v1"
MEM0_PROMPT = """Label a generated answer to a question as CORRECT or WRONG.
You are given: (1) a question one person asked about the other, based on their earlier conversations;
(2) the gold answer; (3) the generated answer to grade.
The gold answer is usually short. Be generous: if the generated answer touches on the same topic as the
gold answer, it is CORRECT. For time questions, the generated answer may be longer or use another
format or a relative reference; it is CORRECT as long as it refers to the same date or period.

Question: {question}
Gold answer: {gold}
Generated answer: {prediction}

Give a one-sentence explanation, then the label. Return JSON: {{"explanation": "...", "label": "CORRECT" or "WRONG"}}"""


def playbook_user_prompt(question: str, gold: str, prediction: str, category_name: str) -> str:
    return (f"Question category: {category_name}\nQuestion: {question}\nGold answer: {gold}\n"
            f"Candidate answer: {prediction}\n\nGrade the candidate answer.")


def _json_object(text: str) -> dict | None:
    m = re.search(r"\{.*\}", text, re.S)
    if not m:
        return None
    try:
        data = json.loads(m.group(0))
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def parse_playbook(text: str) -> tuple[float, str, str | None]:
    """(score 0-100, explanation, error); score -1 with the error when nothing usable was found."""
    data = _json_object(text)
    if data is not None and isinstance(data.get("score"), (int, float)) and not isinstance(data.get("score"), bool):
        score = float(data["score"])
        if 0 <= score <= 100:
            return score, str(data.get("explanation", "")), None
    m = re.search(r"\b(100|\d{1,2})(?:\.\d+)?\b", text)
    if m:
        return float(m.group(1)), text.strip()[:300], None
    return SENTINEL, "", f"unparseable judge reply: {text.strip()[:200]!r}"


def parse_mem0(text: str) -> tuple[float, str, str | None]:
    """(1 CORRECT / 0 WRONG, explanation, error); -1 with the error when neither label is found."""
    data = _json_object(text)
    if data is not None and str(data.get("label", "")).upper() in ("CORRECT", "WRONG"):
        return float(str(data["label"]).upper() == "CORRECT"), str(data.get("explanation", "")), None
    upper = text.upper()
    has_c, has_w = "CORRECT" in upper.replace("INCORRECT", ""), "WRONG" in upper
    if has_c != has_w:
        return float(has_c), text.strip()[:300], None
    return SENTINEL, "", f"unparseable judge reply: {text.strip()[:200]!r}"


def aggregate_runs(scores: Iterable[float], min_ok: int = MIN_OK_RUNS) -> dict[str, Any]:
    """Mean, sample std (ddof=1; 0 for one run), population std (ddof=0) and count of the valid scores."""
    scores = list(scores)
    valid = [s for s in scores if s != SENTINEL]
    mean = statistics.mean(valid) if valid else math.nan
    std = statistics.stdev(valid) if len(valid) > 1 else (0.0 if valid else math.nan)
    std_population = statistics.pstdev(valid) if valid else math.nan
    notes = []
    if len(valid) < len(scores):
        notes.append(f"{len(scores) - len(valid)} of {len(scores)} judge runs failed and were excluded")
    if len(valid) < min_ok:
        notes.append(f"only {len(valid)} judge run(s) succeeded (fewer than {min_ok})")
    warning = "; ".join(notes) or None
    return {"mean": mean, "std": std, "std_population": std_population, "n_ok": len(valid), "scores": valid,
            "warning": warning}


@dataclass
class JudgeRun:
    run: int
    score: float
    explanation: str
    error: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False
    params: dict = field(default_factory=dict)


@dataclass
class Judgement:
    sample_id: str
    question_index: int
    category: int
    protocol: str
    judge_model: str
    prompt_version: str
    answer_config_key: str
    answerer: str
    runs: list[dict]
    mean: float
    std: float
    n_ok: int
    n_runs: int
    warning: str | None
    params: dict = field(default_factory=dict)
    status: str = "complete"  # complete | incomplete (some calls failed: pending, retried by the next run)
    failed_runs: list[dict] = field(default_factory=list)  # {"run", "error"}: calls that failed, not scores
    created_at: str = field(default_factory=utc_now)


class Judge:
    def __init__(self, llm: LLM, protocol: str = "playbook", runs: int | None = None, batch: int = 3,
                 temperature: float | None = None, max_tokens: int = 256) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
        self.llm, self.protocol, self.batch, self.max_tokens = llm, protocol, batch, max_tokens
        self.runs = runs if runs is not None else 10  # both protocols: 10 runs, as the Mem0 paper and the playbook
        self.temperature = temperature if temperature is not None else (0.5 if protocol == "playbook" else 0.0)
        self.prompt_version = {"playbook": PLAYBOOK_VERSION, "mem0": MEM0_VERSION, "strict": STRICT_VERSION}[protocol]

    @property
    def model(self) -> str:
        return f"{self.llm.provider}/{self.llm.model}"

    def request(self, record: dict, run: int) -> LLMRequest:
        """The call for judge run ``run`` of an answer record (the run index salts the cache key)."""
        if self.protocol == "playbook":
            system = PLAYBOOK_SYSTEM
            user = playbook_user_prompt(record["question"], str(record["gold"]), str(record["prediction"]),
                                        record["category_name"])
        else:
            system = ""
            template = STRICT_PROMPT if self.protocol == "strict" else MEM0_PROMPT
            user = template.format(question=record["question"], gold=record["gold"], prediction=record["prediction"])
        return LLMRequest([{"role": "user", "content": user}], system=system, max_tokens=self.max_tokens,
                          temperature=self.temperature, prompt_version=self.prompt_version, salt=f"run-{run}")

    def parse(self, text: str) -> tuple[float, str, str | None]:
        return parse_playbook(text) if self.protocol == "playbook" else parse_mem0(text)

    def judge_run(self, run: int, completion: Completion) -> JudgeRun:
        """A judge run from a reply (an unparseable reply is the protocol's -1 sentinel, with its error)."""
        score, explanation, error = self.parse(completion.text)
        return JudgeRun(run, score, explanation, error, completion.input_tokens, completion.output_tokens,
                        completion.cached, completion.params)

    def _call(self, record: dict, run: int) -> JudgeRun | dict:
        r = self.request(record, run)
        kwargs = {"prompt_version": r.prompt_version, "salt": r.salt} if hasattr(self.llm, "cache") else {}
        try:
            c = self.llm.complete(r.messages, system=r.system, max_tokens=r.max_tokens, temperature=r.temperature,
                                  **kwargs)
        except LLMError as exc:
            return {"run": run, "error": f"{type(exc).__name__}: {exc}"}
        return self.judge_run(run, c)

    def judgement(self, record: dict, runs: list[JudgeRun], failed: list[dict]) -> Judgement:
        """A question's judgement from its completed runs; ``failed`` calls stay pending (not scores)."""
        runs = sorted(runs, key=lambda r: r.run)
        agg = aggregate_runs([r.score for r in runs], min_ok=min(MIN_OK_RUNS, self.runs))
        warning = agg["warning"]
        if failed:
            warning = "; ".join(filter(None, [f"{len(failed)} of {self.runs} judge calls failed (pending: rerun "
                                              "to retry them)", warning]))
        return Judgement(sample_id=record["sample_id"], question_index=int(record["question_index"]),
                         category=int(record["category"]), protocol=self.protocol, judge_model=self.model,
                         prompt_version=self.prompt_version, answer_config_key=record["config_key"],
                         answerer=record["answerer"], runs=[asdict(r) for r in runs], mean=agg["mean"],
                         std=agg["std"], n_ok=agg["n_ok"], n_runs=self.runs, warning=warning,
                         params=next((r.params for r in runs if r.params), {}),
                         status="incomplete" if failed else "complete",
                         failed_runs=sorted(failed, key=lambda f: f["run"]))

    def judge(self, record: dict) -> Judgement:
        """Judge one answer now (``batch`` runs at a time); :func:`judge_answers` judges many through one pool."""
        results: list = []
        with ThreadPoolExecutor(max_workers=self.batch) as pool:
            for start in range(0, self.runs, self.batch):
                results += list(pool.map(lambda r: self._call(record, r), range(start, min(self.runs, start + self.batch))))
        return self.judgement(record, [r for r in results if isinstance(r, JudgeRun)],
                              [r for r in results if isinstance(r, dict)])

    def judgement_key(self, record: dict) -> tuple:
        return (record["sample_id"], int(record["question_index"]), self.protocol, self.model, self.prompt_version,
                record["config_key"], self.runs)


def failed_runs(j: dict) -> list[dict]:
    """The calls of a stored judgement that failed (and are pending). Records written before failures
    were kept apart stored a failed call as a -1 run with an API error: those count as failed too."""
    if "failed_runs" in j:
        return list(j["failed_runs"])
    return [{"run": r["run"], "error": r["error"]} for r in j.get("runs", [])
            if r.get("score") == SENTINEL and r.get("error") and not str(r["error"]).startswith("unparseable")]


def completed_runs(j: dict) -> list[JudgeRun]:
    failed = {f["run"] for f in failed_runs(j)}
    fields = set(JudgeRun.__dataclass_fields__)
    return [JudgeRun(**{k: v for k, v in r.items() if k in fields}) for r in j.get("runs", []) if r["run"] not in failed]


def judge_answers(run: RunFolder, judge: Judge, answers: list[dict], progress: bool | None = None,
                  settings: CallSettings | None = None, log=print) -> list[Judgement]:
    """Judge saved answers of categories 1-4 (never the Worker) through one shared call pool (or
    Message Batches): all runs of all questions at once. Questions already judged the same way are
    skipped; for a question with failed calls only those calls are made again."""
    if any(a.get("answerer") == judge.model for a in answers):  # the report's banner says so too
        log(f"WARNING: the judge {judge.model} is also the answerer: a model grading its own answers inflates J")
    latest = latest_judgements(run)
    plan: list[tuple[dict, list[JudgeRun], list[int]]] = []
    for a in answers:
        if a["category"] == 5 or not a.get("gold"):
            continue
        previous = latest.get(judge.judgement_key(a))
        if previous is None:
            plan.append((a, [], list(range(judge.runs))))
        elif failed_runs(previous):
            plan.append((a, completed_runs(previous), [f["run"] for f in failed_runs(previous)]))
    requests, owner = [], {}
    for i, (a, _, todo_runs) in enumerate(plan):
        for r in todo_runs:
            req = judge.request(a, r)
            owner[id(req)] = (i, r)
            requests.append(req)
    judged = sum(1 for a in answers if a["category"] != 5 and a.get("gold")) - len(plan)
    done_calls = judged * judge.runs + sum(len(kept) for _, kept, _ in plan)  # recorded in the run folder
    got: dict[int, list[JudgeRun]] = {i: list(kept) for i, (_, kept, _) in enumerate(plan)}
    failed: dict[int, list[dict]] = {i: [] for i in range(len(plan))}
    left = {i: len(todo_runs) for i, (_, _, todo_runs) in enumerate(plan)}
    out: list[Judgement] = []

    def on_result(outcome: CallOutcome) -> None:
        i, r = owner[id(outcome.request)]
        if outcome.completion is not None:
            got[i].append(judge.judge_run(r, outcome.completion))
        else:
            failed[i].append({"run": r, "error": outcome.error})
        left[i] -= 1
        if left[i] == 0:
            a = plan[i][0]
            j = judge.judgement(a, got[i], failed[i])
            if j.warning and not j.failed_runs:  # failed calls get one summary below, not a line per question
                warnings.warn(f"{a['sample_id']} q{a['question_index']}: {j.warning}")
            run.append(JUDGEMENTS_FILE, asdict(j))
            out.append(j)

    execute(judge.llm, requests, on_result, stage=f"judging ({judge.protocol})", settings=settings,
            output_per_call=JUDGE_OUTPUT_TOKENS.get(judge.protocol, 45), run=run, already_done=done_calls, log=log,
            progress=progress)
    incomplete = [j for j in out if j.failed_runs]
    if incomplete:
        first = incomplete[0].failed_runs[0]["error"]
        warnings.warn(f"{sum(len(j.failed_runs) for j in incomplete)} judge calls failed for {len(incomplete)} "
                      f"question(s) and are pending (first error: {first}); rerun the same command to retry them")
    return out


def mem0_j_by_run(judgements: list[dict]) -> dict[str, Any]:
    """Mem0's J: % CORRECT over questions, per judge run; then mean, sample and population std across runs."""
    per_run: dict[int, list[float]] = {}
    for j in judgements:
        for r in j["runs"]:
            if r["score"] != SENTINEL:
                per_run.setdefault(int(r["run"]), []).append(r["score"])
    js = [100 * statistics.mean(v) for _, v in sorted(per_run.items()) if v]
    return {"runs": js, "mean": statistics.mean(js) if js else math.nan,
            "std": statistics.stdev(js) if len(js) > 1 else (0.0 if js else math.nan),
            "std_population": statistics.pstdev(js) if js else math.nan, "n_runs": len(js)}
