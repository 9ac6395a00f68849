"""Cost estimates before a paid run and actual usage after it, from an editable price table.

Prices live in ``locomo_kit/prices.json`` (USD per million tokens); override the file with
``LOCOMO_PRICES=/path/to/prices.json``. Check them against the provider's current price list.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

PRICES_FILE = Path(__file__).with_name("prices.json")


def load_prices() -> dict[str, dict[str, float]]:
    path = Path(os.environ.get("LOCOMO_PRICES", PRICES_FILE))
    data = json.loads(path.read_text())
    return {k: v for k, v in data.items() if not k.startswith("_")}


def price_of(model: str, prices: dict | None = None) -> dict[str, float] | None:
    prices = prices or load_prices()
    return prices.get(model.split("/", 1)[-1])


@dataclass
class Estimate:
    what: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float | None

    def line(self) -> str:
        cost = f"${self.usd:,.2f}" if self.usd is not None else "unknown price (add it to prices.json)"
        return (f"{self.what}: {self.calls:,} calls to {self.model}, ~{self.input_tokens:,} input and "
                f"~{self.output_tokens:,} output tokens, {cost}")


def cost(model: str, input_tokens: int, output_tokens: int, prices: dict | None = None) -> float | None:
    p = price_of(model, prices)
    if p is None:
        return None
    return input_tokens / 1e6 * p["input_per_mtok"] + output_tokens / 1e6 * p["output_per_mtok"]


def estimate(what: str, model: str, calls: int, input_per_call: int, output_per_call: int) -> Estimate:
    i, o = calls * input_per_call, calls * output_per_call
    return Estimate(what, model, calls, i, o, cost(model, i, o))
