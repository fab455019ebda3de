"""cost_of() arithmetic per provider convention, the long-context tariff, and the ledger."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest
from browser_use.llm.views import ChatInvokeUsage

from openbrowse.llm.anthropic.wire import reply_usage
from openbrowse.llm.catalog import MODELS, ModelSpec, resolve_model
from openbrowse.llm.openai.common import chat_usage, responses_usage
from openbrowse.llm.usage.costs import CallUsage, CostLedger, breakdown, call_usage, cost_of


def usage(
    prompt: int,
    completion: int,
    *,
    cached: int | None = None,
    writes: int | None = None,
    w5: int | None = None,
    w1h: int | None = None,
    multiplier: float | None = None,
) -> ChatInvokeUsage:
    return ChatInvokeUsage(
        prompt_tokens=prompt,
        prompt_cached_tokens=cached,
        prompt_cache_creation_tokens=writes,
        prompt_cache_creation_5m_tokens=w5,
        prompt_cache_creation_1h_tokens=w1h,
        prompt_image_tokens=None,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        pricing_multiplier=multiplier,
    )


def test_anthropic_every_bucket_at_its_own_rate() -> None:
    # sonnet-5: 2 / 0.2 / 2.5 / 4 / 10 per million. browser-use: prompt = input 1000 + cache read 500;
    # cache writes (150 × 5 min + 50 × 1 h) are NOT in prompt_tokens.
    spec = MODELS["claude-sonnet-5"]
    cost = cost_of(spec, usage(1500, 100, cached=500, writes=200, w5=150, w1h=50))
    assert cost == Decimal("0.003675")  # (1000·2 + 500·0.2 + 150·2.5 + 50·4 + 100·10) / 1e6


def test_anthropic_writes_without_ttl_split_are_five_minute_writes() -> None:
    spec = MODELS["claude-opus-4-8"]  # 5 / 0.5 / 6.25 / 10 / 25
    assert cost_of(spec, usage(1000, 0, cached=0, writes=400)) == Decimal("0.0075")  # 1000·5 + 400·6.25


def test_anthropic_pricing_multiplier() -> None:
    spec = MODELS["claude-sonnet-4-6"]  # 3 / … / 15
    assert cost_of(spec, usage(1000, 100, multiplier=1.1)) == Decimal("0.00495")  # (3000 + 1500) · 1.1 / 1e6


def test_anthropic_usage_as_our_client_reports_it_is_not_double_counted() -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 1000,
            "cache_read_input_tokens": 500,
            "cache_creation_input_tokens": 200,
            "cache_creation": {"ephemeral_5m_input_tokens": 150, "ephemeral_1h_input_tokens": 50},
            "output_tokens": 100,
        },
    }
    reported = reply_usage(message["usage"])
    assert reported is not None
    assert reported.prompt_tokens == 1500  # input + cache reads; writes reported separately
    tokens = breakdown(MODELS["claude-sonnet-5"], reported)
    assert (tokens.uncached_input, tokens.cache_read, tokens.cache_write_5m, tokens.cache_write_1h) == (
        1000,
        500,
        150,
        50,
    )
    assert tokens.prompt_total == 1700
    assert cost_of(MODELS["claude-sonnet-5"], reported) == Decimal("0.003675")


def test_openai_cached_and_written_tokens_are_inside_prompt_tokens() -> None:
    # terra: 2 / 0.2 / 2.5 / – / 12. Responses usage: input 10 000 of which 4 000 cached and 1 000 written.
    raw = type(
        "U",
        (),
        {
            "input_tokens": 10_000,
            "output_tokens": 500,
            "total_tokens": 10_500,
            "input_tokens_details": type("D", (), {"cached_tokens": 4000, "cache_write_tokens": 1000})(),
        },
    )()
    reported = responses_usage(raw)
    assert reported is not None
    # (5000·2 + 4000·0.2 + 1000·2.5 + 500·12) / 1e6
    assert cost_of(MODELS["gpt-5.6-terra"], reported) == Decimal("0.0193")


def test_chat_completions_usage_mapping() -> None:
    raw = type(
        "U",
        (),
        {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320, "prompt_tokens_details": None},
    )()
    reported = chat_usage(raw)
    assert reported is not None
    assert (reported.prompt_tokens, reported.prompt_cached_tokens, reported.completion_tokens) == (300, None, 20)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (272_000, Decimal("0.556")),  # 272 000·2 + 1000·12: at the threshold, normal tariff
        (272_001, Decimal("1.106004")),  # 272 001·4 + 1000·18: above it, long-context tariff for the whole request
    ],
)
def test_openai_long_context_tariff(prompt: int, expected: Decimal) -> None:
    assert cost_of(MODELS["gpt-5.6-terra"], usage(prompt, 1000, cached=0)) == expected


def test_long_context_threshold_counts_cached_tokens() -> None:
    spec = MODELS["gpt-5.6-luna"]  # long: 0.4 / 0.04 / 0.5 / – / 1.8
    assert cost_of(spec, usage(300_000, 0, cached=200_000)) == Decimal("0.048")  # 100 000·0.4 + 200 000·0.04


def test_anthropic_models_have_no_long_context_switch() -> None:
    assert cost_of(MODELS["claude-sonnet-5"], usage(500_000, 0)) == Decimal(1)  # 500 000 · 2 / 1e6


def test_compat_and_unknown_models_cost_zero_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    compat = resolve_model("openai/qwen3-local-test").spec
    with caplog.at_level(logging.WARNING, logger="openbrowse.llm.usage.costs"):
        assert cost_of(compat, usage(1000, 1000)) == 0
        assert cost_of(compat, usage(1000, 1000)) == 0
    assert len([r for r in caplog.records if "qwen3-local-test" in r.getMessage()]) == 1


def test_a_configured_price_on_a_compat_model_is_used() -> None:
    base = resolve_model("openai/priced-test").spec
    priced = ModelSpec(base.id, base.provider, (), False, "default", "compat", MODELS["gpt-5.6-terra"].price)
    assert cost_of(priced, usage(1000, 0)) == Decimal("0.002")


def test_call_usage_counts_all_prompt_tokens() -> None:
    call = call_usage(MODELS["claude-sonnet-5"], usage(1500, 100, cached=500, writes=200), label="judge")
    assert (call.input_tokens, call.cached_tokens, call.cache_write_tokens, call.output_tokens) == (1700, 500, 200, 100)
    assert call.label == "judge"
    assert not call.failed


def test_ledger_records_adds_and_never_rewinds() -> None:
    ledger = CostLedger()
    ledger.seed(input_tokens=100, output_tokens=10, total_usd=Decimal("0.5"))
    ledger.record(CallUsage("m", 50, 0, 0, 5, Decimal("0.25")))
    ledger.add_usd(Decimal("0.03"))
    assert ledger.totals() == ledger.totals()
    totals = ledger.totals()
    assert (totals.input_tokens, totals.output_tokens, totals.total_usd, totals.calls) == (150, 15, Decimal("0.78"), 1)
    ledger.seed(input_tokens=10, output_tokens=1, total_usd=Decimal("0.1"))  # stale row: nothing goes down
    assert ledger.totals() == totals
    ledger.seed(total_usd=Decimal(2))  # another worker spent more: catch up
    assert ledger.total_usd == Decimal(2)
    with pytest.raises(ValueError, match="negative"):
        ledger.add_usd(Decimal(-1))
