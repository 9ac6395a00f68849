"""Per-category aggregation of per-question scores, with 95% intervals.

Intervals: percentile bootstrap (2,000 resamples, fixed seed, so a report is reproducible) for
continuous scores such as F1; Wilson score intervals for 0/1 scores such as Mem0's J.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

import numpy as np

from locomo_kit.dataset import CATEGORY_NAMES

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20231


@dataclass(frozen=True)
class Summary:
    category: int | str  # a category id, or "overall"
    name: str
    count: int
    mean: float
    min: float
    max: float
    ci_low: float
    ci_high: float
    ci_method: str

    def as_dict(self) -> dict:
        return asdict(self)


# intervals drawn in this process: a report and a leaderboard's page summarise the same scores more than once
_INTERVALS: dict[tuple[bytes, float, int, int], tuple[float, float]] = {}


def bootstrap_ci(values: Sequence[float], level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return (math.nan, math.nan)
    if arr.size == 1:
        return (float(arr[0]), float(arr[0]))
    key = (arr.tobytes(), level, resamples, seed)
    if key not in _INTERVALS:
        if len(_INTERVALS) >= 1024:
            _INTERVALS.pop(next(iter(_INTERVALS)))
        rng = np.random.default_rng(seed)
        means = arr[rng.integers(0, arr.size, size=(resamples, arr.size))].mean(axis=1)
        alpha = (1 - level) / 2
        low, high = np.quantile(means, [alpha, 1 - alpha])
        _INTERVALS[key] = (float(low), float(high))
    return _INTERVALS[key]


def wilson_ci(successes: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion."""
    if n == 0:
        return (math.nan, math.nan)
    z = {0.95: 1.959963984540054, 0.9: 1.6448536269514722, 0.99: 2.5758293035489004}[level]
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def summarize(values: Sequence[float], category: int | str, binary: bool = False) -> Summary:
    arr = np.asarray(values, dtype=float)
    if binary:
        low, high = wilson_ci(float(arr.sum()), int(arr.size))
        method = "wilson"
    else:
        low, high = bootstrap_ci(arr)
        method = "bootstrap"
    name = CATEGORY_NAMES.get(category, str(category)) if isinstance(category, int) else str(category)
    empty = arr.size == 0
    return Summary(
        category=category,
        name=name,
        count=int(arr.size),
        mean=math.nan if empty else float(arr.mean()),
        min=math.nan if empty else float(arr.min()),
        max=math.nan if empty else float(arr.max()),
        ci_low=low,
        ci_high=high,
        ci_method=method,
    )


def by_category(items: Iterable[tuple[int, float]], binary: bool = False) -> list[Summary]:
    """Aggregate ``(category, score)`` pairs: one row per category present, then ``overall``.

    ``overall`` is the mean over questions (as the official LoCoMo stats print it), not the mean
    of the category means.
    """
    groups: dict[int, list[float]] = defaultdict(list)
    for category, score in items:
        groups[int(category)].append(float(score))
    rows = [summarize(groups[c], c, binary) for c in sorted(groups)]
    everything = [s for c in sorted(groups) for s in groups[c]]
    rows.append(summarize(everything, "overall", binary))
    return rows


BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240


def paired_bootstrap(a: Sequence[float], b: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = BOOTSTRAP_SEED, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of mean(b − a), resampling question indices jointly."""
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if d.size and np.all(d == d[0]):
        return (float(d[0]), float(d[0]))
    return bootstrap_ci(d, level=level, resamples=resamples, seed=seed)
