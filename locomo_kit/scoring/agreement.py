"""How far judges agree: raw agreement, Cohen's kappa with a bootstrap interval, Fleiss' kappa, and a
proportion with its Wilson interval (the one of :mod:`locomo_kit.scoring.aggregate`).

Verdicts are booleans (accepted or not), one per question, aligned by position. Every interval is
95%; the bootstrap resamples questions jointly (2,000 resamples, fixed seed), so a report is
reproducible.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from locomo_kit.scoring.aggregate import BOOTSTRAP_RESAMPLES, wilson_ci

KAPPA_SEED = 20361


@dataclass(frozen=True)
class Proportion:
    k: int
    n: int
    rate: float | None  # percent
    low: float | None
    high: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def proportion(k: int, n: int) -> Proportion:
    """k of n as a percentage with its Wilson 95% interval (None when n is 0)."""
    if n == 0:
        return Proportion(0, 0, None, None, None)
    low, high = wilson_ci(k, n)
    return Proportion(int(k), int(n), 100 * k / n, 100 * low, 100 * high)


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two raters' binary verdicts; None when it is undefined (both always agree by chance)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0:
        return None
    observed = float(np.mean(x == y))
    pa, pb = float(x.mean()), float(y.mean())
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)


def kappa_interval(a: Sequence[bool], b: Sequence[bool], resamples: int = BOOTSTRAP_RESAMPLES,
                   seed: int = KAPPA_SEED) -> tuple[float | None, float | None]:
    """Percentile bootstrap 95% interval of Cohen's kappa, resampling questions (undefined resamples dropped)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2:
        return (None, None)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(resamples, x.size))
    xs, ys = x[idx], y[idx]
    observed = (xs == ys).mean(axis=1)
    pa, pb = xs.mean(axis=1), ys.mean(axis=1)
    expected = pa * pb + (1 - pa) * (1 - pb)
    ok = expected < 1
    if not ok.any():
        return (None, None)
    kappas = (observed[ok] - expected[ok]) / (1 - expected[ok])
    low, high = np.quantile(kappas, [0.025, 0.975])
    return (float(low), float(high))


def fleiss_kappa(verdicts: Sequence[Sequence[bool]]) -> float | None:
    """Fleiss' kappa of m raters over the same questions: ``verdicts[rater][question]``; None when undefined."""
    arr = np.asarray(verdicts, dtype=float)
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] == 0:
        return None
    m, _ = arr.shape
    yes = arr.sum(axis=0)
    counts = np.stack([yes, m - yes], axis=1)  # questions × categories
    p_i = ((counts * (counts - 1)).sum(axis=1)) / (m * (m - 1))
    p_bar = float(p_i.mean())
    p_j = counts.sum(axis=0) / counts.sum()
    p_e = float((p_j ** 2).sum())
    if p_e >= 1:
        return None
    return (p_bar - p_e) / (1 - p_e)


def pair_agreement(a: Sequence[bool], b: Sequence[bool]) -> dict:
    """Raw agreement (with its Wilson interval), Cohen's kappa with its bootstrap interval, and both kinds of split."""
    n = len(a)
    agree = sum(x == y for x, y in zip(a, b))
    low, high = kappa_interval(a, b)
    kappa = cohen_kappa(a, b)
    return {"n": n, "agreement": proportion(agree, n).as_dict(), "kappa": kappa, "kappa_low": low, "kappa_high": high,
            "a_yes_b_no": sum(x and not y for x, y in zip(a, b)), "a_no_b_yes": sum(y and not x for x, y in zip(a, b))}


def finite(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))
