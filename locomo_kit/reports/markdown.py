"""report.md: generated from a run's records, saying what each number is comparable to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from locomo_kit.data_fetch import AUDIT_COMMIT
from locomo_kit.dataset import CATEGORY_NAMES, Conversation
from locomo_kit.imported.identity import imported
from locomo_kit.paths import write_atomic
from locomo_kit.reports.baselines import FOOTNOTES, LOCOMO_F1, MEM0_F1, MEM0_J, MEM0_LABELLING, MEM0_LATENCY
from locomo_kit.reports.completeness import banners
from locomo_kit.reports.errors import analyse
from locomo_kit.reports.figures import write_figures
from locomo_kit.reports.floor import floor_lines, floor_rows
from locomo_kit.reports.html import write_run_html
from locomo_kit.reports.imported import build_imported_report
from locomo_kit.reports.judges import judge_matrix, matrix_lines
from locomo_kit.reports.numbers import interval, markdown_table, num, pct
from locomo_kit.reports.pending import failed_answers, floor_gaps, incomplete_judgements
from locomo_kit.reports.reliability import reliability_banners
from locomo_kit.reports.run_warnings import run_warnings
from locomo_kit.reports.sessions import session_lines
from locomo_kit.reports.summary import summarize_run
from locomo_kit.reports.system_facts import fact_rows, run_system, source_phrase
from locomo_kit.runs import RunFolder, utc_now
from locomo_kit.scoring.compression import section as compression_section

FULL_QUESTIONS = 1540
AUDIT_SOURCE = f"dial481/locomo-audit errors.json at {AUDIT_COMMIT[:12]}, CC BY-NC 4.0"
CATS = (1, 2, 3, 4)


def trace_phrase(traced: dict[str, Any]) -> str:
    """``retrieved memories traced to turns: 100.0% (2,031 by turn ids from the system, 0 by the text rule, 0
    not placed)``, or why nothing could be measured."""
    n = int(traced.get("retrieved") or 0)
    if not traced.get("share_placed"):
        return (f"none of the {n:,} retrieved memories could be placed on a LoCoMo turn, by turn id or by text: "
                "evidence recall is not measured")
    out = (f"retrieved memories traced to turns: {pct(traced['share_placed'])}% ({traced['turn_ids']:,} by turn "
           f"ids from the system, {traced['text']:,} by the text rule, {traced['none']:,} not placed)")
    if traced.get("questions_not_measured"):
        out += f"; {traced['questions_not_measured']} question(s) not measured (nothing they retrieved was placed)"
    return out


def _by_cat(rows: list[dict]) -> dict:
    return {r["category"]: r for r in rows}


def sample_note(summary: dict) -> str:
    n, convs = summary["questions_by_category"], len(summary["samples"])
    n14 = sum(v for k, v in n.items() if k != 5)
    if convs < 10 or n14 < FULL_QUESTIONS:
        return (f"**Small sample: {convs} conversation(s), {n14} questions of categories 1-4 (the full benchmark has "
                f"10 and {FULL_QUESTIONS}).** Per-category intervals are wide; published numbers are over all ten "
                "conversations, so differences smaller than the intervals mean nothing.")
    return f"Full benchmark: {convs} conversations, {n14} questions of categories 1-4."


def _consistency(c: Any) -> str:
    if isinstance(c, dict) and c.get("why"):
        return str(c["why"])
    if not isinstance(c, dict) or not c.get("probes"):
        return "not checked"
    state = "consistent" if c.get("consistent") else f"NOT consistent ({c.get('found')} of {c.get('probes')} found)"
    return f"{state} after {c.get('seconds')} s ({c.get('probes')} probes)"


def pending_banner(run: RunFolder, include_answers: bool = True) -> list[str]:
    """Lines for the top of the report when calls failed or questions have fewer valid judge runs than asked
    (``include_answers`` False: judge calls only, when :func:`completeness.banners` covers the answers)."""

    out = []
    n = failed_answers(run) if include_answers else 0
    if n:
        out.append(f"> **Incomplete: {n} question(s) have no answer (their answer calls failed).** They are missing "
                   "from every number below; rerun the same command to retry exactly those calls.")
    floor = floor_gaps(run)
    if floor:
        out.append(f"> **Incomplete no-memory floor: {floor} question(s) have no floor answer (their empty-context "
                   "calls failed).** The floor in section 4 is over the others; rerun the same command to retry "
                   "exactly those calls.")
    for protocol, (questions, calls) in incomplete_judgements(run).items():
        why = f"{calls} judge call(s) failed and are pending" if calls else "some judge replies were unparseable"
        out.append(f"> **J ({protocol}) is over partial data: {questions} question(s) have fewer valid judge runs "
                   f"than asked ({why}).**" + (" Rerun the same command to retry exactly the failed calls." if calls else ""))
    return [line for pair in zip(out, [""] * len(out)) for line in pair]


def audited_section(s: dict) -> list[str]:
    """Both gold keys side by side, with the original key's per-category ceilings."""
    au = s.get("audited")
    if not au:
        return ["## 1b. Audited gold key", "", "Not scored under the audited key (score with `--gold both`).", ""]
    lines = ["## 1b. Both gold keys: original and audited", "",
             f"The audited key applies the independent LoCoMo audit ({AUDIT_SOURCE}): corrected gold answers for "
             f"{au['answers_changed']} of these questions and corrected evidence turn ids (retrieval diagnostics under "
             "it use them). **Ceiling** = share of questions whose original gold answer the audit keeps: a perfect "
             "system scored against the original key cannot exceed it. Published numbers used the original key.", ""]
    f1o, f1a = _by_cat(s["locomo_f1"]), _by_cat(au["locomo_f1"])
    m0o, m0a = _by_cat(s["mem0_f1"]), _by_cat(au["mem0_f1"])
    dgo, dga = _by_cat(s["diagnostics"]), _by_cat(au["diagnostics"])
    header = ["category", "gold answers changed", "ceiling %", "F1 original", "F1 audited", "Mem0 F1 original",
              "Mem0 F1 audited", "evidence recall original", "evidence recall audited"]
    protocols = [p for p in ("mem0", "strict", "playbook") if s["judge"].get(p)]
    for p in protocols:
        header += [f"J {p} original", f"J {p} audited"]
    rows = []
    for c in list(CATS) + ["overall"]:
        if c not in au["ceilings"]:
            continue
        ce = au["ceilings"][c]
        row = [f"{c} {CATEGORY_NAMES[c]}" if c != "overall" else "overall",
               f"{ce['answers_changed']} of {ce['questions']}", ce["ceiling"], f1o.get(c, {}).get("mean"), f1a.get(c, {}).get("mean"), m0o.get(c, {}).get("mean"),
               m0a.get(c, {}).get("mean"), dgo.get(c, {}).get("recall_all"), dga.get(c, {}).get("recall_all")]
        for p in protocols:
            row += [_by_cat(s["judge"][p]).get(c, {}).get("mean"), _by_cat(au["judge"].get(p, [])).get(c, {}).get("mean")]
        rows.append(row)
    lines += markdown_table(header, rows)
    if au.get("judge_missing"):
        lines += [f"**{au['judge_missing']} judgement(s) under the audited key are missing** (judge with `--gold both`): "
                  "the audited J leaves those questions out.", ""]
    return lines


def calibration_section(s: dict) -> list[str]:
    """The judge's false-accept rates on known-wrong answers and true-accept rate on gold."""
    rows = s.get("calibration") or []
    if not rows:
        return []
    lines = ["## 2b. Judge calibration", "",
             "Beside the answers, the judge graded a calibration set built from the dataset with no LLM (fixed-seed "
             "sample of questions): **specific-wrong** = the gold answer of another question of the same category and "
             "conversation; **vague-topical** = a topical non-answer made from the question's own words; **gold** = "
             "the gold answer. Rates are the share of judge runs that accepted (playbook: score ≥ 50), averaged per "
             "item, with 95% Wilson intervals over items. A published stress test put a lenient judge at 62.8% "
             "false-accept on vague answers and 10.6% on specific ones.", ""]
    table = [[r["protocol"], r["judge_model"], r["prompt_version"], r["kind"], r["rate_name"], r["items"], r["rate"],
              interval(r["ci_low"], r["ci_high"]), num(r["published_false_accept"])] for r in rows]
    lines += markdown_table(["protocol", "judge", "prompt", "answers", "rate", "items", "rate %", "95% CI",
                     "published lenient judge %"], table)
    return lines


def published(v: float | None, digits: int = 2) -> str:
    """A published number at its published precision."""
    return num(v, digits)


def header_lines(run: RunFolder, conversations: list[Conversation], s: dict) -> list[str]:
    """The title, the configuration, the banners (partial data, failures, pending calls) and the summary line."""
    m = s["manifest"]
    diag = _by_cat(s["diagnostics"])
    f1 = _by_cat(s["locomo_f1"])
    config = m.get("config_label") or f"{s['answerer']}, top_k {s['top_k']}"
    lines = [f"# LoCoMo report: {s['run_id']}", "", f"Configuration: **{config}** (run id `{s['run_id']}`).", ""]
    # unanswered questions (with the first error), ingestion and retrieval gaps, then judge calls pending
    lines += (banners(run, conversations, s) + run_warnings(run, conversations)
              + pending_banner(run, include_answers=False) + reliability_banners(run, s, conversations))
    coverage = diag.get("overall", {}).get("coverage@8")
    budget = m.get("answer", {}).get("context_budget")
    recall = diag.get("overall", {}).get("recall_all")
    traced = s.get("trace") or {}
    unplaced = bool(traced.get("retrieved")) and not traced.get("share_placed")
    retrieved = (f"; evidence within the {budget:,}-token context: "
                 + ("not measured" if unplaced and recall is None else f"{num(recall)}%")
                 if budget else f"; evidence retrieved in the top 8: {num(coverage)}%" if coverage is not None else "")
    retrieved += f" ({trace_phrase(traced)})" if traced.get("retrieved") else ""
    lines += [f"**Summary.** {', '.join(s['samples'])}: {s['questions']} questions answered by {s['answerer_label']} "
              f"from {source_phrase(m, s['source'])}"
              f"; official F1 {num(f1['overall']['mean'])}% {interval(f1['overall']['ci_low'], f1['overall']['ci_high'])}"
              + retrieved + ".", "",
              sample_note(s), ""]
    if s["answerer"] == "extractive":
        lines += ["> The answers come from the **extractive floor** (rules, no LLM). Its scores measure the pipeline, "
                  "not a memory system's quality, and are not comparable to any LLM-answered number below.", ""]
    return lines


def kit_retrieval(s: dict) -> str:
    """What the kit asked of the memory system per question (not the system's own settings)."""
    budget = s["manifest"].get("answer", {}).get("context_budget")
    if budget and s["top_k"] is not None:
        return f"at most {num(s['top_k'])} memories asked for, cut to the context budget"
    return num(s["top_k"])


def facts_section(s: dict) -> list[str]:
    """The run's facts as a two-column table: the run, the memory system and each of its own options, the
    kit's retrieval (labelled as the kit's), the answerer, the judge, the data and the code."""
    m = s["manifest"]
    worker = m.get("worker", {})
    budget = m.get("answer", {}).get("context_budget")
    judges = s["judge"]["models"]
    facts = [["run id", s["run_id"]], *fact_rows(m),
             ["ingestion mode", str(m.get("parameters", {}).get("mode", "–"))],
             ["answer source", s["source"]], ["answerer", s["answerer_label"]],
             ["kit retrieval: top_k", kit_retrieval(s)],
             ["kit retrieval: context budget", f"{budget:,} tokens" if budget else "–"],
             ["kit retrieval: query", str(m.get("answer", {}).get("retrieval") or "–")],
             ["configuration id", str(m.get("config_id", "–"))],
             ["ingestion", str(m.get("ingestion", {}).get("id", "–"))],
             ["semantic search", str(worker.get("semantic_search") or "–")],
             ["read-your-writes wait", _consistency(m.get("consistency"))],
             ["answer prompt version", s["prompt_version"]],
             ["judge", "; ".join(f"{p}: {jm}, prompt {pv}, {n} runs" for p, jm, pv, n in judges) or "not judged"],
             ["dataset sha256", str(m.get("dataset", {}).get("sha256", "–"))],
             ["questions", ", ".join(f"cat {k} ({CATEGORY_NAMES[k]}): {v}" for k, v in s["questions_by_category"].items())],
             ["git commit", str(m.get("git_commit") or "–")], ["report written", utc_now()]]
    return ["## Run facts", ""] + markdown_table(["fact", "value"], [[k, v.replace("|", "/")] for k, v in facts])


def f1_section(s: dict) -> list[str]:
    """1. Official F1 and Mem0's F1 beside the published rows."""
    m = s["manifest"]
    f1, mf1 = _by_cat(s["locomo_f1"]), _by_cat(s["mem0_f1"])
    lines = ["## 1. F1 against published numbers", "",
             "Official LoCoMo token F1 (the LoCoMo paper's metric). The paper's rows are overall scores that *include* "
             "adversarial questions and were answered from the full conversation or RAG by the named models: "
             + ("this run includes adversarial questions too." if 5 in s["questions_by_category"] else
                "this run excludes adversarial questions, so its overall is **not comparable** to those rows."), ""]
    this_run = f"this run ({s['answerer_label']}; {run_system(m, s['source'])})"
    rows = [[this_run] + [f1.get(c, {}).get("mean") for c in CATS] + [f1.get(5, {}).get("mean"), f1["overall"]["mean"]]]
    rows += [[b.system + " (LoCoMo paper)"] + ["–"] * 5 + [published(b.values["overall"], 1)] for b in LOCOMO_F1]
    lines += markdown_table(["system", "cat 1", "cat 2", "cat 3", "cat 4", "cat 5", "overall"], rows)
    lines += ["Mem0's set-based F1 (Mem0's released code: lowercase, strip .,!?, no stemming, token sets) by category id; "
              f"the published rows used gpt-4o-mini as answerer. {MEM0_LABELLING}", ""]
    rows = [[this_run] + [mf1.get(c, {}).get("mean") for c in CATS]]
    rows += [[b.system + " (Mem0 paper)"] + [published(b.values.get(c)) for c in CATS] for b in MEM0_F1]
    return lines + markdown_table(["system", "cat 1", "cat 2", "cat 3", "cat 4"], rows)


def judge_section(s: dict) -> list[str]:
    """2. J per protocol: Mem0's beside its published rows, the playbook's and the strict prompt's alone."""
    m = s["manifest"]
    judges = s["judge"]["models"]
    lines = ["## 2. LLM-as-a-Judge (J) against published numbers", ""]
    mem0_rows, pb_rows = _by_cat(s["judge"]["mem0"]), _by_cat(s["judge"]["playbook"])
    if mem0_rows:
        jm = [p for p in judges if p[0] == "mem0"][0]
        lines += [f"Mem0 protocol (binary CORRECT/WRONG, lenient prompt paraphrased from Mem0's code), judged by "
                  f"{jm[1]} ({jm[3]} runs); J = % correct per run, mean ± sample std across runs (population std in "
                  "parentheses: published spreads are population std). Mem0's rows were judged "
                  f"by gpt-4o-mini: a different judge, so differences include judge behaviour. {MEM0_LABELLING}", ""]
        rows = [[f"this run ({run_system(m, s['source'])})"] + [f"{num(mem0_rows[c]['mean'])} ± {num(mem0_rows[c]['std_sample'], 2)} "
                                                                f"({num(mem0_rows[c]['std_population'], 2)})" if c in mem0_rows else "–"
                                                                for c in CATS + ("overall",)]]
        rows += [["95% CI over questions"] + [interval(mem0_rows[c]["ci_low"], mem0_rows[c]["ci_high"])
                                              if c in mem0_rows else "–" for c in CATS + ("overall",)]]
        rows += [[b.system + " (Mem0 paper)"] + [published(b.values.get(c)) for c in CATS] + [published(b.values.get("overall"))]
                 for b in MEM0_J]
        lines += markdown_table(["system", "cat 1", "cat 2", "cat 3", "cat 4", "overall"], rows)
    if pb_rows:
        jp = [p for p in judges if p[0] == "playbook"][0]
        lines += [f"Playbook protocol (0-100 score, four criteria), judged by {jp[1]} ({jp[3]} runs per question): "
                  "mean of per-question means and pooled std across judge runs (sample; population in parentheses). A 0-100 graded score is **not "
                  "comparable** to Mem0's binary J, so no published row is placed beside it.", ""]
        rows = [[f"{c} {pb_rows[c]['name']}" if c != "overall" else "overall", pb_rows[c]["count"], pb_rows[c]["mean"],
                 f"{num(pb_rows[c]['pooled_run_std'], 2)} ({num(pb_rows[c].get('pooled_run_std_population'), 2)})",
                 interval(pb_rows[c]["ci_low"], pb_rows[c]["ci_high"]),
                 pb_rows[c]["warnings"]] for c in list(CATS) + ["overall"] if c in pb_rows]
        lines += markdown_table(["category", "n", "J (0-100)", "pooled run std", "95% CI (bootstrap)", "questions with warnings"], rows)
    strict_rows = _by_cat(s["judge"].get("strict", []))
    if strict_rows:
        js_ = [p for p in judges if p[0] == "strict"][0]
        lines += [f"Strict protocol (binary CORRECT/WRONG with a strict prompt, {js_[2]}), judged by {js_[1]} ({js_[3]} runs): "
                  "J = % correct per run, mean ± sample std (population std); 95% Wilson interval over questions. "
                  "No published row used this prompt.", ""]
        rows = [[f"{c} {strict_rows[c]['name']}" if c != "overall" else "overall", strict_rows[c]["count"],
                 f"{num(strict_rows[c]['mean'])} ± {num(strict_rows[c]['std_sample'], 2)} ({num(strict_rows[c]['std_population'], 2)})",
                 interval(strict_rows[c]["ci_low"], strict_rows[c]["ci_high"])]
                for c in list(CATS) + ["overall"] if c in strict_rows]
        lines += markdown_table(["category", "n", "J %", "95% CI"], rows)
    if not mem0_rows and not pb_rows and not strict_rows:
        lines += ["Not judged: no judge model was available (set `ANTHROPIC_API_KEY`, or pass `--judge-model "
                  "openai/<model> --judge-base-url …` to `locomo-kit score`). J needs an LLM; the F1 scores above "
                  "do not.", ""]
    return lines + calibration_section(s)


def latency_section(s: dict) -> list[str]:
    """3. Seconds per question and context tokens beside Mem0's published latencies."""
    m = s["manifest"]
    lat = s["latency_ms"]
    sec = lambda v: None if v is None else v / 1000
    lines = ["## 3. Latency and tokens against Mem0", "",
             "Seconds per question (p50/p95) and context tokens per question. This run's context tokens are "
             "characters/4 of the whole context block given to the answerer: the memories with their date, type "
             "and source labels, under a two-line header (a context budget counts the memories' own text only, "
             "so this figure runs above it); "
             + ("its answering time is the extractive rules', not an LLM's, so only search latency compares."
                if s["answerer"] == "extractive" else "answering time includes the LLM call as made from this machine."), ""]
    rows = [[f"this run ({run_system(m, s['source'])})", sec(lat["search"]["p50"]), sec(lat["search"]["p95"]),
             sec(lat["total"]["p50"]), sec(lat["total"]["p95"]), s["tokens_per_question"]["context_tokens"]]]
    rows += [[r["system"] + " (Mem0 paper)", r["search_p50"], r["search_p95"], r["total_p50"], r["total_p95"], r["tokens"]]
             for r in MEM0_LATENCY]
    lines += markdown_table(["system", "search p50", "search p95", "total p50", "total p95", "context tokens"],
                            [[row[0]] + [num(c, 3) for c in row[1:5]] + [num(row[5], 0)] for row in rows])
    t = s["tokens_per_question"]
    return lines + [f"Tokens per question (this run): context ≈ {num(t['context_tokens'])}, input {num(t['input_tokens'])}, "
                    f"output {num(t['output_tokens'])}, total {num(t['total_tokens'])}.", ""]


def category_section(s: dict, conversations: list[Conversation], run: RunFolder | None = None) -> list[str]:
    """4. Official F1 per category with its interval, Mem0 F1 and BLEU-1."""
    f1, mf1, b1 = _by_cat(s["locomo_f1"]), _by_cat(s["mem0_f1"]), _by_cat(s["bleu1"])
    lines = ["## 4. Per category, with 95% intervals", "",
             "Official F1 (%) with a percentile-bootstrap interval (2,000 resamples, fixed seed); Mem0 F1 and BLEU-1 (%).", ""]
    rows = [[f"{c} {f1[c]['name']}" if c != "overall" else "overall", f1[c]["count"], f1[c]["mean"],
             interval(f1[c]["ci_low"], f1[c]["ci_high"]), f1[c]["min"], f1[c]["max"],
             mf1.get(c, {}).get("mean"), b1.get(c, {}).get("mean")] for c in [k for k in f1 if k != "overall"] + ["overall"]]
    lines += markdown_table(["category", "n", "F1", "95% CI", "min", "max", "Mem0 F1", "BLEU-1"], rows)
    return lines + floor_lines(floor_rows(s["answerer"], list(s["_answers"].values()), conversations, f1, run=run))


def retrieval_section(s: dict) -> list[str]:
    """5. Evidence coverage@k, recall, MRR, NDCG and answer-in-context; session-level recall; search latency."""
    diag = _by_cat(s["diagnostics"])
    budget = s["manifest"].get("answer", {}).get("context_budget")
    lines = ["## 5. Retrieval diagnostics (no LLM involved)", "",
             "Evidence coverage@k: share of a question's evidence turns among the turns the top-k retrieved memories "
             "came from (exact turn ids when the Worker reports them, else text overlap). Answer in context: every "
             "normalised gold token appears in the retrieved memories. n counts the questions that list evidence turns "
             "(a few LoCoMo questions list none: 2 of conv-26's category 3), so it can be below the answered count."
             + (f" With a context budget the results are spans of turns packed to {budget:,} tokens: @k counts the "
                f"first k spans, \"all\" everything within the budget." if budget else ""), ""]
    rows = [[f"{c} {diag[c]['name']}" if c != "overall" else "overall", diag[c]["count"]]
            + [diag[c][f"coverage@{k}"] for k in (1, 3, 5, 8, 10, 20)] + [diag[c].get("recall_all")]
            + [num(diag[c].get("mrr"), 3), num(diag[c].get("ndcg@5"), 3), num(diag[c].get("ndcg@10"), 3),
               diag[c]["answer_in_context"]] for c in diag]
    lines += markdown_table(["category", "n", "@1", "@3", "@5", "@8", "@10", "@20",
                             f"all (within {budget:,} tokens)" if budget else f"all (top {num(s['top_k'])})", "MRR",
                             "NDCG@5", "NDCG@10", "answer in context"], rows)
    lines += ["Evidence recall (\"all\"): coverage over every memory retrieved (k = top_k). MRR: mean of 1/rank of the first retrieved memory holding an evidence turn (0 when none is in the "
              "top k). NDCG@k: binary gains, a rank counts when it brings an evidence turn not seen above it; the "
              "ideal puts one at each of the first min(#evidence, k) ranks.", ""]
    lines += session_lines(s["diagnostics"])
    search_lat = s["latency_ms"]["search"]
    if search_lat.get("n"):
        lines += [f"Search latency beside these (ms, {search_lat['n']} questions): p50 {num(search_lat['p50'])}, "
                  f"p95 {num(search_lat['p95'])}, p99 {num(search_lat.get('p99'))}.", ""]
    return lines


def errors_section(a: dict) -> list[str]:
    """6. Why answers were wrong (memory or answerer), accuracy by distance, best and worst examples."""
    sp = a["failure_split"]
    lines = ["## 6. Error analysis", "", f"An answer counts as correct when {a['basis']}.", "",
             f"Of {sp['wrong answers']} wrong answers (categories 1-4): **{sp['memory did not retrieve the evidence']}** "
             f"had none of their evidence in the retrieved memories (the memory lost it), "
             f"**{sp['evidence retrieved but answer wrong']}** had some of it (the answerer missed it).", "",
             "Accuracy by how far back the evidence lies (sessions between the newest evidence turn and the "
             "conversation's last session):", ""]
    lines += markdown_table(["sessions back", "questions", "accuracy %", "mean F1 %"],
                            [[r["sessions_back"], r["count"], r["accuracy"], r["mean_f1"]] for r in a["by_distance"]])
    for cat, ex in a["examples"].items():
        lines += [f"### Category {cat} ({ex['name']}): best and worst", ""]
        for title, items in (("Best", ex["top"]), ("Worst", ex["bottom"])):
            lines.append(f"**{title} {len(items)}**")
            lines.append("")
            for e in items:
                mems = "; ".join(" / ".join(x.replace("|", "/").split("\n")) for x in e["memories"]) or "no memories"
                lines.append(f"- {e['sample_id']} q{e['question_index']} (F1 {num(e['f1'], 2)}): {e['question']} "
                             f"— gold *{e['gold']}*, answer *{e['prediction']}*. Memories: {mems}")
            lines.append("")
    return lines


def costs_section(s: dict) -> list[str]:
    """7. Tokens and cost per stage, at prices.json's prices."""
    rows = [[k, v["model"], v["input_tokens"], v["output_tokens"],
             "unknown price" if v["usd"] is None else f"${num(v['usd'], 4)}"] for k, v in s["costs"].items()]
    return (["## 7. Costs", ""]
            + markdown_table(["stage", "model", "input tokens", "output tokens", "cost (prices.json)"], rows)
            + ["Tokens include answers served from the disk cache (they cost nothing when rerun).", ""])


def build_report(run: RunFolder, conversations: list[Conversation]) -> tuple[Path, list[Path], dict]:
    """Write ``report.md`` (its sections in order, each from the function named for it), ``figures/*.png``
    and ``report.html`` into the run folder; return the markdown's path, the figures and the summary."""
    if imported(run.manifest()):  # answered elsewhere: its own sections (coverage first, no retrieval)
        return build_imported_report(run, conversations)
    s = summarize_run(run)
    a = analyse(s, conversations)
    figures = write_figures(s, a, run.path / "figures")
    lines = header_lines(run, conversations, s) + facts_section(s)
    lines += f1_section(s) + audited_section(s) + judge_section(s) + latency_section(s) + category_section(s, conversations, run)
    lines += retrieval_section(s) + compression_section(run, a) + errors_section(a) + costs_section(s)
    lines += matrix_lines(judge_matrix(run), heading="## 8. Judges side by side")
    lines += ["## Figures", ""] + [f"![{p.stem}](figures/{p.name})" for p in figures] + [""]
    lines += ["## Notes", ""] + [f"- {n}" for n in FOOTNOTES] + [f"- {MEM0_LABELLING}", ""]
    path = write_atomic(run.path / "report.md", "\n".join(lines))
    html = write_run_html(run, conversations, path)
    run.update_manifest(report={"written_at": utc_now(), "path": str(path), "html": str(html)})
    return path, figures, s
