"""CDP tokens of raw browsers (spec §21.4): random, kept hashed, expiring, per browser, revocable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from openbrowse.sessions.browser_tokens import MAX_TOKENS_PER_BROWSER, BrowserTokens

NOW = datetime(2026, 8, 18, 9, 0, tzinfo=UTC)


class Ticker:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_token_opens_its_own_browser_until_it_expires() -> None:
    ticker = Ticker()
    tokens = BrowserTokens(clock=lambda: NOW, monotonic=ticker)
    issued = tokens.issue("b1", 60)
    assert issued.expires_at == NOW + timedelta(seconds=60) and len(issued.value) >= 40
    assert tokens.valid("b1", issued.value)
    assert not tokens.valid("b2", issued.value)
    assert not tokens.valid("b1", issued.value + "x") and not tokens.valid("b1", None) and not tokens.valid("b1", "")
    ticker.now += 59.9
    assert tokens.valid("b1", issued.value)
    ticker.now += 0.1
    assert not tokens.valid("b1", issued.value)


def test_tokens_are_random_kept_hashed_and_revoked_together() -> None:
    tokens = BrowserTokens()
    first, second = tokens.issue("b1", 60), tokens.issue("b1", 60)
    assert first.value != second.value
    assert tokens.valid("b1", first.value) and tokens.valid("b1", second.value)
    assert first.value not in repr(tokens._by_browser)  # only digests are kept
    tokens.revoke("b1")
    assert not tokens.valid("b1", first.value) and not tokens.valid("b1", second.value)
    assert tokens.count("b1") == 0


def test_a_browser_keeps_a_bounded_number_of_tokens() -> None:
    ticker = Ticker()
    tokens = BrowserTokens(monotonic=ticker)
    oldest = tokens.issue("b1", 60)
    expired = tokens.issue("b1", 1)
    ticker.now += 2
    for _ in range(MAX_TOKENS_PER_BROWSER):
        tokens.issue("b1", 60)
    assert tokens.count("b1") == MAX_TOKENS_PER_BROWSER
    assert not tokens.valid("b1", oldest.value) and not tokens.valid("b1", expired.value)
