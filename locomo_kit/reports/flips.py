"""Which answers flip between two runs, and whether the flips are more than chance.

For a pair of runs (A, B), over the questions both answered: how many both get right, only A, only B,
neither (on the cross-run table's basis, :mod:`locomo_kit.reports.question_table`); the exact McNemar test
(two-sided binomial test of the discordant pairs, only-A against only-B, at p = ½) and, beside it, the
difference of accuracy B − A with the paired bootstrap interval ``compare`` reports for every metric.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any, Iterable, Sequence

from locomo_kit.reports.numbers import num, p_value, signed, signed_interval
from locomo_kit.reports.question_table import correct_vector
from locomo_kit.scoring.aggregate import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, paired_bootstrap


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: P(a split at least as uneven as this | n discordant, p = ½)."""
    if only_a < 0 or only_b < 0:
        raise ValueError("discordant counts cannot be negative")
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1))
    return min(1.0, 2 * tail / 2 ** n)  # exact integers, one correctly rounded division


def all_pairs(n: int) -> list[tuple[int, int]]:
    return list(combinations(range(n), 2))


def flip_counts(table: dict[str, Any], pairs: Iterable[tuple[int, int]] | None = None,
                gold: str = "original") -> list[dict[str, Any]]:
    """One entry per pair (run indices into ``table["runs"]``; default every pair), in order."""
    runs = table["runs"]
    vectors = {}
    out = []
    for a, b in (all_pairs(len(runs)) if pairs is None else pairs):
        for i in (a, b):
            if i not in vectors:
                vectors[i] = correct_vector(table, i, gold)
        shared = [(x, y) for x, y in zip(vectors[a], vectors[b]) if x is not None and y is not None]
        both = sum(x and y for x, y in shared)
        only_a = sum(x and not y for x, y in shared)
        only_b = sum(y and not x for x, y in shared)
        xa = [100.0 * x for x, _ in shared]
        xb = [100.0 * y for _, y in shared]
        low, high = paired_bootstrap(xa, xb) if shared else (math.nan, math.nan)
        out.append({"a": a, "b": b, "run_a": runs[a]["name"], "run_b": runs[b]["name"],
                    "run_id_a": runs[a]["run_id"], "run_id_b": runs[b]["run_id"], "gold": gold, "n": len(shared),
                    "both": both, "only_a": only_a, "only_b": only_b, "neither": len(shared) - both - only_a - only_b,
                    "accuracy_a": 100 * (both + only_a) / len(shared) if shared else None,
                    "accuracy_b": 100 * (both + only_b) / len(shared) if shared else None,
                    "diff": 100 * (only_b - only_a) / len(shared) if shared else None,
                    "ci_low": low, "ci_high": high, "mcnemar_p": mcnemar_exact(only_a, only_b)})
    return out


def flips_for_keys(table: dict[str, Any], pairs: Sequence[tuple[int, int]] | None = None) -> dict[str, list[dict]]:
    """:func:`flip_counts` under each gold key the table has."""
    return {g: flip_counts(table, pairs, g) for g in table["gold_keys"]}


def method(table: dict[str, Any]) -> str:
    return (f"right: {table['basis']}; exact McNemar test (two-sided binomial on the discordant questions); "
            f"accuracy difference (second − first) with a paired bootstrap 95% interval ({BOOTSTRAP_RESAMPLES} resamples, "
            f"seed {BOOTSTRAP_SEED})")


def flip_lines(flips: list[dict[str, Any]], table: dict[str, Any]) -> list[str]:
    """The flip table as Markdown: per pair, the four counts, the accuracy difference and McNemar's p."""
    if not flips:
        return ["Only one run: no pair to compare.", ""]
    lines = [f"Over the questions both runs answered ({flips[0]['gold']} gold key); {method(table)}. "
             f"Two tests on one pair: the paired difference of mean official F1 (paired bootstrap, the lead test, "
             f"where a page shows it) is on the F1 scores, which credit partial overlap; this table is on binary "
             f"accuracy (right = {table['basis']}) and counts the questions that flip. They measure different "
             "things and can disagree; read the F1 difference first, this table for the flips.", "",
             "| first | second | n | both right | right only in the first | right only in the second | both wrong "
             "| accuracy second − first [95% CI] | McNemar exact p |", "|---|---|---|---|---|---|---|---|---|"]
    for f in flips:
        counts = " | ".join(num(f[k]) for k in ("n", "both", "only_a", "only_b", "neither"))
        lines.append(f"| {f['run_a']} | {f['run_b']} | {counts} | {signed(f['diff'])} "
                     f"{signed_interval(f['ci_low'], f['ci_high'])} | {p_value(f['mcnemar_p'])} |")
    return lines + [""]
