"""``locomo-kit judges``: every judge of a run side by side (J, agreement, kappa, the questions they split on),
and the verdict-set options ``import`` shares (``--verdicts FILE… --judge-name NAME``)."""

from __future__ import annotations

import argparse
import json

from locomo_kit.cli.common import CliError, call_settings, existing_run
from locomo_kit.cli.options import add_call_options, add_judge_options
from locomo_kit.data_fetch import DataFetchError
from locomo_kit.imported.verdicts import VerdictImportError, VerdictMapping
from locomo_kit.pipeline.judge_bank import JudgeBankError
from locomo_kit.pipeline.judges import JUDGES_JSON, add_verdicts, bank_judges, write_judges
from locomo_kit.runs import RunFolder


def add_verdict_options(p: argparse.ArgumentParser) -> None:
    """``--verdicts FILE… --judge-name NAME`` (repeatable, paired in order) and the verdict files' mapping."""
    g = p.add_argument_group("verdict sets", "Verdicts produced elsewhere over this run's answers, each set named for "
                             "its judge; matched by conversation and question index or text.")
    g.add_argument("--verdicts", nargs="+", action="append", default=[], metavar="FILE",
                   help="a verdict set: one file, or one per conversation (repeatable, each with a --judge-name)")
    g.add_argument("--judge-name", action="append", default=[], metavar="NAME",
                   help="the name of the set given by the --verdicts before it: its judge (model, prompt) or "
                   "source; 'human' (or 'human: …') for people's labels")
    g.add_argument("--verdict-map", action="append", default=[], metavar="KEY=FIELD",
                   help="where the verdict files hold what: records, conversation (a field, or @file), index, id "
                   "(both numbers, e.g. conv3_q17), question, answer, verdict, explanation, class (repeatable)")
    g.add_argument("--verdict-label", action="append", default=[], metavar="LABEL=correct|wrong",
                   help="what a verdict label means, e.g. --verdict-label CORRECT=correct (repeatable; any other "
                   "label is refused)")


def verdict_sets(args: argparse.Namespace) -> list[tuple[list[str], str]]:
    """The (files, name) pairs the options give, checked: one name per set, no name twice."""
    groups, names = args.verdicts, args.judge_name
    if len(groups) != len(names):
        raise CliError(f"{len(groups)} --verdicts set(s) but {len(names)} --judge-name(s): name every set "
                       "(--verdicts FILE… --judge-name NAME, once per set)")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CliError(f"two verdict sets named {twice[0]!r}: give each set a name of its own")
    return list(zip(groups, names))


def apply_verdicts(args: argparse.Namespace, run: RunFolder, dataset_path: str | None = None) -> None:
    """Add every ``--verdicts`` set to ``run`` and print one line per set (a :class:`CliError` on bad input)."""
    sets = verdict_sets(args)
    if not sets:
        return
    try:
        mapping = VerdictMapping.from_options(args.verdict_map, args.verdict_label)
        for files, name in sets:
            result = add_verdicts(run, files=files, name=name, mapping=mapping, dataset_path=dataset_path)
            print(result.line())
            for item in result.listed[:5]:
                where = (f"{item['file']} record {item['position']}" if "file" in item
                         else f"{item['sample_id']} q{item['question_index']}")
                print(f"  {item['reason']}: {where}")
            if len(result.listed) > 5:
                print(f"  … and {len(result.listed) - 5} more, all in {run.path / 'verdicts.json'}")
    except VerdictImportError as exc:
        raise CliError(str(exc)) from None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judges", help="every judge of a run side by side: J, agreement, kappa, disagreements",
                       description="The judge matrix of a run: J per judge (the kit's judges, the source's verdicts, "
                       "imported verdict sets, people's labels, and the rule-based judges) per category with Wilson "
                       "intervals under both gold keys, every pair's agreement and Cohen's kappa with a bootstrap "
                       "interval, Fleiss' kappa, the swing per category and the questions the judges split on. "
                       "Writes judges.md and judges.json into the run folder.")
    p.add_argument("run", nargs="?", help="a run id or a run folder's path")
    p.add_argument("--bank", nargs="?", const="", metavar="FILE",
                   help="judges against people: the labelled judge bank (default: the catalogue's judge-bank entry) "
                   "as the judge 'human', beside the rule-based judges and every kit judge graded on it "
                   "(--judge-model adds one); acceptance per class beside the bank authors' published rates")
    p.add_argument("--no-rules", action="store_true", help="leave the rule-based judges (F1 ≥ 0.5, …) out")
    p.add_argument("--json", action="store_true", help="print judges.json instead of the summary")
    p.add_argument("--dataset", help="path to locomo10.json (default data/locomo10.json)")
    add_verdict_options(p)
    add_judge_options(p)
    add_call_options(p)
    p.set_defaults(func=handle)


def _bank(args: argparse.Namespace) -> int:
    try:
        path, matrix = bank_judges(args.bank or None, judge_model=args.judge_model,
                                   protocol=args.judge_protocol or "mem0", runs=args.judge_runs,
                                   base_url=args.judge_base_url, calls=call_settings(args), timeout=args.timeout)
    except (JudgeBankError, DataFetchError) as exc:
        raise CliError(str(exc)) from None
    people = matrix["keys"]["original"].get("people") or {}
    for r in people.get("rows", []):
        kappa = "–" if r["kappa"] is None else f"{r['kappa']:.3f}"
        print(f"{r['judge']} ({r['basis']}): agreement with people {r['agreement']['rate']:.1f}%, kappa {kappa}; "
              + ", ".join(f"accepts {c} {v['rate']:.1f}%" for c, v in r["acceptance"].items()))
    best = people.get("best")
    if best and best["clears"]:
        print(f"agrees best with people: {best['judge']} (its kappa interval lies above {best['next']}'s)")
    print(f"judges: {path} (+ {JUDGES_JSON})")
    return 0


def handle(args: argparse.Namespace) -> int:
    if args.bank is not None:
        if args.run or args.verdicts:
            raise CliError("--bank compares judges on the judge bank: give no RUN and no --verdicts with it")
        return _bank(args)
    if not args.run:
        raise CliError("name a run (locomo-kit judges RUN), or compare judges against people with --bank")
    if args.judge_model:
        raise CliError(f"a kit judge adds its verdict set to a run through score: locomo-kit score --run-id {args.run} "
                       f"--judge-model {args.judge_model} (then locomo-kit judges {args.run})")
    run = existing_run(args)
    apply_verdicts(args, run, args.dataset)
    path, matrix = write_judges(run, rules=not args.no_rules, dataset_path=args.dataset)
    if args.json:
        print((run.path / JUDGES_JSON).read_text(encoding="utf-8"))
        return 0
    if not matrix["keys"]:
        raise CliError(f"{run.path}: no answers of categories 1-4 to compare judges on")
    e = matrix["keys"]["original"]
    for name, row in e["j"].items():
        o = row["overall"]
        print(f"J {name}: {o['rate']:.1f}% [{o['low']:.1f}, {o['high']:.1f}] over {o['n']} answers")
    for p in e["pairs"]:
        kappa = "–" if p["kappa"] is None else f"{p['kappa']:.3f}"
        print(f"{p['a']} vs {p['b']}: agreement {p['agreement']['rate']:.1f}%, kappa {kappa}")
    print(f"{len(e['disagreements'])} questions on which the judges that read the answers disagree")
    print(f"judges: {path} (+ {JUDGES_JSON}); json: {json.dumps(str(run.path / JUDGES_JSON))}")
    return 0
