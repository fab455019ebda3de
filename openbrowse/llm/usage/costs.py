"""Provider-reported usage → USD (spec §16.1), and the running per-session totals.

What ``ChatInvokeUsage`` holds depends on who filled it in, so the split into billable buckets does too:

* Anthropic (our client, ``anthropic_wire.reply_usage``, counting as browser-use's ``ChatAnthropic`` did):
  ``prompt_tokens = input_tokens + cache_read_input_tokens``.
  Anthropic's ``input_tokens`` excludes both cache reads and cache writes, so ``prompt_tokens`` contains the
  cache reads but **not** the cache writes, which arrive separately in ``prompt_cache_creation_tokens`` (split
  into ``…_5m_tokens`` / ``…_1h_tokens`` when the API reports the split). Uncached input is therefore
  ``prompt_tokens − cached``, and writes are added on top.
* OpenAI (our Responses and Chat Completions adapters): ``prompt_tokens`` is the API's ``input_tokens`` /
  ``prompt_tokens``, which *includes* cached tokens (``prompt_cached_tokens``) and cache writes
  (``prompt_cache_creation_tokens``, from ``input_tokens_details.cache_write_tokens`` where reported).
  Uncached input is ``prompt_tokens − cached − writes``. OpenAI writes are priced at the catalog's cache-write
  rate (there is no 1 h column for OpenAI).
* Output: ``completion_tokens`` (OpenAI's includes reasoning tokens; Anthropic's includes thinking).

OpenAI ``gpt-5.6-*`` requests whose prompt exceeds ``LONG_CONTEXT_THRESHOLD`` are priced at the long-context
tariff for the whole request. ``pricing_multiplier`` (Anthropic US-only inference) is applied when present.
Models not in the catalog (and ``openai/<id>`` without a configured price) cost 0, with one warning per model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from openbrowse.llm.catalog import LONG_CONTEXT_THRESHOLD, MODELS, ModelSpec, Price, Provider

if TYPE_CHECKING:
    from browser_use.llm.views import ChatInvokeUsage

logger = logging.getLogger(__name__)

_MILLION = Decimal(1_000_000)
_warned_unpriced: set[str] = set()


@dataclass(frozen=True, slots=True)
class TokenBreakdown:
    """Billable token buckets of one call."""

    uncached_input: int
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int
    output: int

    @property
    def prompt_total(self) -> int:
        """Every prompt token of the request, however it was billed."""
        return self.uncached_input + self.cache_read + self.cache_write_5m + self.cache_write_1h


def breakdown(spec: ModelSpec, usage: ChatInvokeUsage) -> TokenBreakdown:
    """Split ``usage`` into billable buckets following the provider's convention (module docstring)."""
    cached = max(usage.prompt_cached_tokens or 0, 0)
    writes = max(usage.prompt_cache_creation_tokens or 0, 0)
    write_1h = max(usage.prompt_cache_creation_1h_tokens or 0, 0)
    write_5m = max(usage.prompt_cache_creation_5m_tokens or 0, 0)
    write_5m += max(writes - write_5m - write_1h, 0)  # no TTL split reported: all writes are 5-minute writes
    writes_total = write_5m + write_1h
    prompt = max(usage.prompt_tokens, 0)
    # Anthropic's prompt_tokens already leave the cache writes out; OpenAI's include them.
    uncached = prompt - cached if spec.provider is Provider.ANTHROPIC else prompt - cached - writes_total
    return TokenBreakdown(max(uncached, 0), cached, write_5m, write_1h, max(usage.completion_tokens, 0))


def _price_for(spec: ModelSpec, tokens: TokenBreakdown) -> Price:
    if spec.long_context_price is not None and tokens.prompt_total > LONG_CONTEXT_THRESHOLD:
        return spec.long_context_price
    return spec.price


def _is_unpriced(spec: ModelSpec) -> bool:
    price = spec.price
    return spec.id not in MODELS and not any((price.input, price.cache_read, price.cache_write_5m, price.output))


def cost_of(spec: ModelSpec, usage: ChatInvokeUsage) -> Decimal:
    """USD cost of one call (exact ``Decimal``, not rounded)."""
    if _is_unpriced(spec):
        if spec.id not in _warned_unpriced:
            _warned_unpriced.add(spec.id)
            logger.warning("No price known for model %s; its calls are counted as costing 0 USD", spec.id)
        return Decimal(0)
    tokens = breakdown(spec, usage)
    price = _price_for(spec, tokens)
    write_1h_rate = price.cache_write_1h if price.cache_write_1h is not None else price.cache_write_5m
    total = (
        tokens.uncached_input * price.input
        + tokens.cache_read * price.cache_read
        + tokens.cache_write_5m * price.cache_write_5m
        + tokens.cache_write_1h * write_1h_rate
        + tokens.output * price.output
    ) / _MILLION
    if usage.pricing_multiplier is not None:
        total *= Decimal(repr(usage.pricing_multiplier))
    return total


@dataclass(frozen=True, slots=True)
class CallUsage:
    """One LLM call as the meter reports it."""

    model: str
    """Catalog id of the model (``openai/<id>`` for compatible endpoints)."""
    input_tokens: int
    """All prompt tokens: uncached + cache reads + cache writes."""
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
    cost_usd: Decimal
    failed: bool = False
    """The call raised, but the provider had already reported (and billed) this usage."""
    label: str | None = None
    """What the call was for, when the caller named it (``agent``, ``preflight``, ``judge``…)."""


def call_usage(spec: ModelSpec, usage: ChatInvokeUsage, *, failed: bool = False, label: str | None = None) -> CallUsage:
    tokens = breakdown(spec, usage)
    return CallUsage(
        model=spec.id,
        input_tokens=tokens.prompt_total,
        cached_tokens=tokens.cache_read,
        cache_write_tokens=tokens.cache_write_5m + tokens.cache_write_1h,
        output_tokens=tokens.output,
        cost_usd=cost_of(spec, usage),
        failed=failed,
        label=label,
    )


@dataclass(frozen=True, slots=True)
class CostTotals:
    input_tokens: int
    output_tokens: int
    total_usd: Decimal
    calls: int


@dataclass(slots=True)
class CostLedger:
    """Running totals for one session; seeded from the stored row so spend never rewinds (spec §16.1).

    ``total_usd`` includes non-LLM spend added with :meth:`add_usd` (CapSolver solves).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_usd: Decimal = field(default_factory=Decimal)
    calls: int = 0

    def record(self, call: CallUsage) -> None:
        """Add one metered call (usable directly as a ``MeteredChatModel`` ``on_usage`` callback)."""
        self.input_tokens += call.input_tokens
        self.output_tokens += call.output_tokens
        self.total_usd += call.cost_usd
        self.calls += 1

    def add_usd(self, amount: Decimal) -> None:
        """Add spend that is not an LLM call (e.g. a CAPTCHA solve)."""
        if amount < 0:
            raise ValueError("spend cannot be negative")
        self.total_usd += amount

    def seed(self, *, input_tokens: int = 0, output_tokens: int = 0, total_usd: Decimal = Decimal(0)) -> None:
        """Raise the totals to stored values; a lower stored value never lowers what is already counted."""
        self.input_tokens = max(self.input_tokens, input_tokens)
        self.output_tokens = max(self.output_tokens, output_tokens)
        self.total_usd = max(self.total_usd, total_usd)

    def totals(self) -> CostTotals:
        return CostTotals(self.input_tokens, self.output_tokens, self.total_usd, self.calls)
