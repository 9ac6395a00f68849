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


CHARS_PER_TOKEN = 3.5  # English prose in Claude's tokenizer is about 3.5-4 characters a token: err high
MESSAGE_OVERHEAD_TOKENS = 8
BATCH_DISCOUNT = 0.5  # Message Batches are billed at half the list price


def prompt_tokens(system: str, messages: list[dict]) -> int:
    """Input tokens of one request, estimated from its actual text."""
    chars = len(system) + sum(len(str(m.get("content", ""))) for m in messages)
    return int(chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS


@dataclass
class Plan:
    """What a paid stage is about to spend: calls still needed after the cache and the run folder."""

    what: str
    model: str
    calls: int
    already_done: int
    input_tokens: int
    output_tokens: int  # expected
    max_output_tokens: int  # if every reply used max_tokens
    batch: bool = False
    prices: dict | None = None
    local: bool = False  # a local (non-hosted) server: nothing is paid per token

    def _usd(self, output_tokens: int) -> float | None:
        if self.local:
            return 0.0
        usd = cost(self.model, self.input_tokens, output_tokens, self.prices)
        return None if usd is None else usd * (BATCH_DISCOUNT if self.batch else 1.0)

    @property
    def usd(self) -> float | None:
        return self._usd(self.output_tokens)

    @property
    def max_usd(self) -> float | None:
        """The most this plan can cost (every reply at max_tokens): what ``--max-cost`` is checked against."""
        return self._usd(self.max_output_tokens)

    def line(self) -> str:
        if self.local:
            price = "no cost (a local server)"
        elif self.usd is None and not self.model.startswith("anthropic/"):
            price = "no cost (no price for it in prices.json)"
        elif self.usd is None:
            price = "unknown price (add the model to prices.json)"
        else:
            price = f"~${self.usd:,.2f} (at most ${self.max_usd:,.2f})" + (" at the 50% batch price" if self.batch else "")
        return (f"{self.what}: {self.calls:,} calls to {self.model} still needed ({self.already_done:,} already done), "
                f"~{self.input_tokens:,} input and ~{self.output_tokens:,} output tokens, {price}")


def plan(what: str, model: str, requests: list, already_done: int, output_per_call: int, batch: bool = False,
         local: bool = False) -> Plan:
    """A :class:`Plan` for ``requests`` (:class:`~locomo_kit.llm.base.LLMRequest`), tokens from their text."""
    return Plan(what, model, len(requests), already_done,
                sum(prompt_tokens(r.system, r.messages) for r in requests),
                sum(min(output_per_call, r.max_tokens) for r in requests), sum(r.max_tokens for r in requests), batch,
                local=local)
