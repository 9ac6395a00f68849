"""``locomo-kit import``: bring answers produced elsewhere and score them on the kit's footing
(:mod:`locomo_kit.imported`); ``locomo-kit judge-bank``: run a judge against the labelled bank."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from locomo_kit.cli.common import CliError, call_settings, finish, judge_options
from locomo_kit.cli.judges import add_verdict_options, apply_verdicts, verdict_sets
from locomo_kit.cli.options import add_call_options, add_judge_options
from locomo_kit.data_fetch import DataFetchError
from locomo_kit.imported.catalogue import entries, fetch_entry
from locomo_kit.imported.formats import PRESETS, ImportFormatError, describe_file, load_mapping, parse_map_options
from locomo_kit.imported.importer import import_outputs
from locomo_kit.pipeline.judge_bank import JudgeBankError, run_judge_bank
from locomo_kit.pipeline.stages import run_judge, run_report, run_score


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="import another harness's per-question outputs as a run, and score it here",
                       description="Read per-question outputs produced elsewhere (one file, or one per conversation), "
                       "match each record to its LoCoMo question by conversation and question text (whitespace and "
                       "case normalised) or by index checked against the text, and write a run folder that score, "
                       "report, export, compare and leaderboard treat as a run: official F1, Mem0 F1 and BLEU-1 under "
                       "both gold keys, the source's own verdicts as a judgement beside its claim, and the kit's judge "
                       "with --judge-model. SOURCE is a file, several files, or a catalogue entry (--list).")
    p.add_argument("source", nargs="*", help="file(s) to import, or one catalogue entry such as memobase-0.0.37")
    p.add_argument("--list", action="store_true", help="list the catalogue of published outputs and the presets")
    p.add_argument("--preset", choices=sorted(PRESETS), help="the file's format (a catalogue entry knows its own)")
    p.add_argument("--mapping", metavar="FILE", help="a JSON mapping: records, conversation, question or index, answer, "
                   "category, verdict, gold, f1, bleu, claim, category_names")
    p.add_argument("--map", action="append", default=[], metavar="KEY=FIELD",
                   help="one mapping entry, e.g. --map records=results --map answer=prediction (repeatable; "
                   "overrides --preset and --mapping). Special values: records= (the file is the list), records=* "
                   "(an object of lists, one per conversation); conversation=@key (the key of that list), "
                   "conversation=@file (one file per conversation, named by a sample id such as conv-26 or conv26 "
                   "in its name, else its digits as a position), conversation=@sequence (dataset order, a new "
                   "conversation where the index falls back); no conversation at all: each record's is found by "
                   "its question text where that text is unique in the dataset")
    p.add_argument("--conversation", metavar="SAMPLE_ID",
                   help="every record is of this conversation (a file of one, with no conversation field), e.g. "
                   "--conversation conv-26")
    p.add_argument("--category-name", action="append", default=[], metavar="LABEL=ID",
                   help="how the file names a category, e.g. --category-name single_hop=4 (repeatable)")
    p.add_argument("--system", help="the system that answered (default: the catalogue's, else the first file's name)")
    p.add_argument("--answerer", help="the answer model the source says it used")
    p.add_argument("--source-judge", help="the judge model the source says it used")
    p.add_argument("--claim", type=float, help="the J (%%) the source claims, compared with its recomputed verdicts")
    p.add_argument("--empty-answers", choices=["score-zero", "skip"], default="score-zero",
                   help="records with an empty answer: imported as empty answers that score 0 (default) or skipped; "
                   "either way counted and listed")
    p.add_argument("--allow-partial", action="store_true",
                   help="import even when fewer than half of the records match a LoCoMo question")
    p.add_argument("--run-id", help="run folder name under outputs/runs (default: imported-<system>-<key>)")
    p.add_argument("--dataset", help="path to locomo10.json (default data/locomo10.json)")
    p.add_argument("--force", action="store_true", help="fetch a catalogue entry's files again")
    add_judge_options(p)
    add_verdict_options(p)
    add_call_options(p)
    p.set_defaults(func=_cmd_import)

    bank = sub.add_parser("judge-bank", help="run a judge against the labelled judge bank: acceptance per class",
                          description="Grade the 240 labelled candidate answers of the judge bank (80 correct, 80 "
                          "specific-but-wrong, 80 vague-topical-wrong) with a judge model and protocol, and report "
                          "the acceptance rate per class with Wilson 95% intervals beside the rates the bank's authors "
                          "published for the same prompt (REPORT.md) where they exist.")
    bank.add_argument("--bank", help="final-bank.json (default: the catalogue's judge-bank entry)")
    bank.add_argument("--out", help="folder for judge-bank.md and .json (default outputs/judge-bank/<judge>-<protocol>)")
    add_judge_options(bank)
    add_call_options(bank)
    bank.set_defaults(func=_cmd_judge_bank)


def _catalogue_lines() -> list[str]:
    lines = ["catalogue (locomo-kit import NAME):"]
    for name, e in entries().items():
        claim = e.claim.get("j")
        lines.append(f"  {name:<16} {e.data['repository']}@{e.data['commit']} ({e.data['licence']}); preset "
                     f"{e.preset or '–'}" + (f"; claims J {claim}" if claim is not None else ""))
    lines.append("presets: " + "; ".join(f"{p.name}: {p.description}" for p in PRESETS.values()))
    return lines


def _cmd_import(args: argparse.Namespace) -> int:
    if args.list:
        print("\n".join(_catalogue_lines()))
        return 0
    if not args.source:
        raise CliError("name a file to import (or several, one per conversation), or a catalogue entry (--list)")
    if args.judge_protocol and not args.judge_model:
        raise CliError(f"--judge-protocol {args.judge_protocol} needs --judge-model")
    verdict_sets(args)  # the sets' names are checked before anything is imported
    catalogue, preset, claim, scope, where = None, args.preset, args.claim, None, None
    system, answerer, judge = args.system, args.answerer, args.source_judge
    try:
        if len(args.source) == 1 and not Path(args.source[0]).exists() and args.source[0] in entries():
            e, files, _ = fetch_entry(args.source[0], force=args.force)
            catalogue = {**e.identity(), "claim_by_category": e.claim.get("by_category")}
            preset = preset or e.preset
            system = system or e.data["system"]
            answerer, judge = answerer or e.data.get("answerer"), judge or e.data.get("judge")
            if claim is None and e.claim.get("j") is not None:
                claim, where = e.claim["j"], e.claim.get("where")
            scope = e.claim.get("scope")
        else:
            files = [Path(s) for s in args.source]
            missing = [str(f) for f in files if not f.is_file()]
            if missing:
                raise CliError(f"no such file: {', '.join(missing)} (and not a catalogue entry: "
                               f"{', '.join(entries())})")
        names = dict(item.split("=", 1) for item in args.category_name if "=" in item)
        if len(names) != len(args.category_name):
            raise CliError("--category-name takes LABEL=ID, e.g. single_hop=4")
        overrides = parse_map_options(args.map)
        if args.conversation:
            overrides["conversation"] = f"={args.conversation}"
        try:
            mapping = load_mapping(preset, args.mapping, overrides,
                                   {k.strip().lower(): int(v) for k, v in names.items() if v.strip().isdigit()} or None)
        except ImportFormatError as exc:  # before asking for a preset, say what the file holds
            if preset or args.mapping or not str(exc).startswith("say how to read the file"):
                raise
            raise ImportFormatError(f"{exc}\n" + "\n".join(describe_file(Path(f)) for f in files[:3])) from None
        result = import_outputs(files, mapping, system or Path(files[0]).stem, preset=preset, answerer=answerer,
                                judge=judge, claim=claim, claim_scope=scope, claim_where=where, catalogue=catalogue,
                                run_id=args.run_id, dataset_path=args.dataset, empty_answers=args.empty_answers,
                                allow_partial=args.allow_partial)
    except (ImportFormatError, DataFetchError) as exc:
        raise CliError(str(exc)) from None
    run = result.run
    print(result.line())
    for item in result.listed[:10]:
        print(f"  {item['reason']}: {item['file']} record {item['position']} (conversation {item['conversation']}, "
              f"index {item['index']}): {item['question'] or '–'}")
    if len(result.listed) > 10:
        print(f"  … and {len(result.listed) - 10} more, all in {run.path / 'import.json'}")
    run_score(run, sample="all", dataset_path=args.dataset)
    apply_verdicts(args, run, dataset_path=args.dataset)
    status = 0
    if args.judge_model:
        run_judge(run, judge=judge_options(args), gold="both", calls=call_settings(args), dataset_path=args.dataset)
        status = finish([], run)
    report, _, summary = run_report(run, sample="all", dataset_path=args.dataset)
    f1 = next(r for r in summary["locomo_f1"] if r["category"] == "overall")
    print(f"official F1 {f1['mean']:.1f}% over {summary['questions']} matched questions (answered elsewhere)")
    print(f"report:  {report}")
    print(f"run folder: {run.path}")
    return status


def _cmd_judge_bank(args: argparse.Namespace) -> int:
    if not args.judge_model:
        raise CliError("judge-bank needs --judge-model (anthropic/<model>, openai/<model> with --judge-base-url)")
    try:
        judge = replace(judge_options(args), protocol=args.judge_protocol or "mem0")
        result = run_judge_bank(judge, bank=args.bank, out=args.out, calls=call_settings(args))
    except (JudgeBankError, DataFetchError) as exc:
        raise CliError(str(exc)) from None
    for line in result["console"]:
        print(line)
    if result["failed"]:
        print(f"locomo-kit: error: {result['failed']} bank items have no valid judge run (rerun to retry)",
              file=sys.stderr)
        return 1
    return 0
