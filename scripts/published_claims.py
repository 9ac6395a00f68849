"""Every vendor's published LoCoMo claim beside its re-scored numbers: writes docs/published-claims.md.

    .venv/bin/python scripts/published_claims.py [--out docs/published-claims.md]

Imports every catalogue entry that has a preset (``locomo-kit import NAME``: each file fetched pinned
by sha256, or copied from $LOCOMO_PUBLISHED_SOURCE), scores it under both
gold keys, and writes the table from the imported runs' records. Runs go to
$LOCOMO_OUTPUTS_DIR (default outputs/)/runs; the figures also to outputs/published-claims/claims.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from locomo_kit.cli import main as cli_main
from locomo_kit.dataset import load_dataset
from locomo_kit.imported.catalogue import entries
from locomo_kit.paths import PROJECT_ROOT, default_dataset_path, outputs_dir
from locomo_kit.reports.imported import audited_flips, claim_check, source_score_check
from locomo_kit.runs import RunFolder
from locomo_kit.runs.records import load_answers, load_scores

COMMAND = "python scripts/published_claims.py"


def measure(name: str) -> dict:
    if cli_main(["import", name]) != 0:
        raise SystemExit(f"importing {name} failed (see above)")
    run = next(RunFolder(p.name) for p in sorted((outputs_dir() / "runs").glob("imported-*"),
                                                 key=lambda p: p.stat().st_mtime, reverse=True)
               if (p / "manifest.json").is_file()
               and json.loads((p / "manifest.json").read_text()).get("imported", {}).get("catalogue", {}).get("entry") == name)
    m = run.manifest()
    block = m["imported"]
    key = m["answer"]["config_key"]
    answers = load_answers(run, key)
    original = {(s["sample_id"], s["question_index"]): s for s in load_scores(run, key, "original")}
    audited = {(s["sample_id"], s["question_index"]): s for s in load_scores(run, key, "audited")}
    order = [c.sample_id for c in load_dataset(default_dataset_path())]
    claim = claim_check(block, answers, order)
    one_four = [s for s in original.values() if s["category"] != 5]
    one_four_audited = [s for s in audited.values() if s["category"] != 5]
    flips = audited_flips(answers, audited)
    check = source_score_check(answers, original)
    pct = lambda xs: 100 * statistics.mean(xs) if xs else None
    return {"entry": name, "system": block["system"], "run_id": run.run_id,
            "source": f"{block['catalogue']['repository']}@{block['catalogue']['commit']}",
            "answerer": block["answerer"], "judge": block["judge"], "claim": claim["claim"],
            "claim_where": claim["claim_from"], "scope": claim["scope"].get("description") or "the file's records",
            "j_scope": claim["j_scope"][0], "n_scope": claim["n_scope"], "agrees": claim.get("agrees"),
            "j_1_4": claim["j_1_4"][0], "n_1_4": claim["n_1_4"],
            "coverage": block["coverage"], "reasons": block["reasons"],
            "official_f1": pct([s["locomo_f1"] for s in one_four]),
            "official_f1_audited": pct([s["locomo_f1"] for s in one_four_audited]),
            "mem0_f1": pct([s["mem0_f1"] for s in one_four]), "bleu1": pct([s["bleu1"] for s in one_four]),
            "adversarial_refusal": pct([s["locomo_f1"] for s in original.values() if s["category"] == 5]),
            "answer_words": statistics.mean(len(str(a["prediction"]).split()) for a in answers if a["category"] != 5),
            "flips": flips["flipped"], "changed": flips["changed"], "j_audited": flips["j_audited"][0],
            "own_scores": {k: {"compared": v["compared"], "differ": v["differ"]} for k, v in check.items()}}


def _f(v, digits: int = 1) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def page(rows: list[dict]) -> str:
    lines = ["# Published claims, re-scored", "",
             f"Produced by `{COMMAND}` (it runs `locomo-kit import NAME` for every catalogue entry with a preset and "
             "reads the imported runs back). Vendors published these J scores from their own harnesses, answerers, "
             "judges and prompts; the kit imports the per-question outputs they committed and scores them with one "
             "scorer and both gold keys. Categories are LoCoMo's ids (1 multi-hop, 2 temporal, 3 open-domain, "
             "4 single-hop, 5 adversarial); every figure below except the claim was measured by the command.", "",
             "## Claim against the source's own verdicts", "",
             "| entry | claimed J % | the claim's scope | J from the file's verdicts over that scope % (n) | agrees | "
             "J from the verdicts, categories 1-4 % (n) | source |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['entry']} | {r['claim']} | {r['scope']} | {_f(r['j_scope'], 2)} ({r['n_scope']}) | "
                     f"{'yes' if r['agrees'] else 'no'} | {_f(r['j_1_4'], 2)} ({r['n_1_4']}) | {r['source']}: "
                     f"{r['claim_where']} |")
    lines += ["", "## The kit's footing (categories 1-4 of the matched questions)", "",
              "| entry | coverage (all / cats 1-4) | not matched | official F1 % | official F1, audited key % | "
              "Mem0 F1 % | BLEU-1 % | answer words | verdicts the audited key flips (of gold answers changed) | "
              "source's J under the audited key % |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["coverage"]
        why = "; ".join(f"{k}: {v}" for k, v in r["reasons"].items()) or "none"
        lines.append(f"| {r['entry']} | {c['questions']:,} / {c['questions_1_4']:,} | {why} | {_f(r['official_f1'], 2)} | "
                     f"{_f(r['official_f1_audited'], 2)} | {_f(r['mem0_f1'], 2)} | {_f(r['bleu1'], 2)} | "
                     f"{_f(r['answer_words'])} | {r['flips']} (of {r['changed']}) | {_f(r['j_audited'], 2)} |")
    lines += ["", "## Notes", ""]
    for r in rows:
        notes = [f"answerer: {r['answerer']}; judge: {r['judge']}"]
        if r["adversarial_refusal"] is not None and r["coverage"]["by_category"]["5"]["answered"] > 10:
            notes.append(f"adversarial answers meeting the official refusal rule: {_f(r['adversarial_refusal'])}% of "
                         f"{r['coverage']['by_category']['5']['answered']}")
        for k, v in r["own_scores"].items():
            notes.append(f"its own per-question {k}: {v['differ']} of {v['compared']} differ from the kit's")
        lines.append(f"- **{r['entry']}** ({r['system']}, run `{r['run_id']}`): " + "; ".join(notes) + ".")
    lines += ["", "The audited key's flips use the kit's token rule (a CORRECT answer sharing no token with the "
              "audited gold becomes WRONG; a WRONG one with official F1 ≥ 0.5 against it becomes CORRECT); a judge's "
              "flips need `locomo-kit import NAME --judge-model …`. See [scoring](scoring.md) for the metrics and "
              "`locomo-kit import --list` for the catalogue.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(PROJECT_ROOT / "docs" / "published-claims.md"))
    args = parser.parse_args(argv)
    rows = [measure(name) for name, e in entries().items() if e.preset]
    Path(args.out).write_text(page(rows), encoding="utf-8")
    bench = outputs_dir() / "published-claims"
    bench.mkdir(parents=True, exist_ok=True)
    (bench / "claims.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    print(f"{args.out} written ({len(rows)} entries); figures in {bench / 'claims.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
