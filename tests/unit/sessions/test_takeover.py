"""Takeover tokens (spec §21.5): one per target, stored hashed, replaced by a newer one, revoked by a resume."""

from __future__ import annotations

from openbrowse.sessions.takeover import TakeoverTokens


def test_a_token_allows_its_target_only_until_closed() -> None:
    tokens = TakeoverTokens()
    token = tokens.open("a")
    assert tokens.allows("a", token) and tokens.is_open("a")
    assert not tokens.allows("b", token)
    assert not tokens.allows("a", token + "x") and not tokens.allows("a", None) and not tokens.allows("a", "")
    tokens.close("a")
    assert not tokens.allows("a", token) and not tokens.is_open("a")
    tokens.close("a")  # closing twice is fine


def test_opening_again_replaces_the_older_token() -> None:
    tokens = TakeoverTokens()
    old = tokens.open("a")
    new = tokens.open("a")
    assert old != new
    assert tokens.allows("a", new) and not tokens.allows("a", old)


def test_only_a_digest_is_kept() -> None:
    tokens = TakeoverTokens()
    token = tokens.open("a")
    assert token not in repr(vars(tokens))


def test_last_input_is_noted_while_open() -> None:
    now = [100.0]
    tokens = TakeoverTokens(monotonic=lambda: now[0])
    tokens.note_input("a")
    assert tokens.last_input("a") is None  # no takeover open
    tokens.open("a")
    now[0] = 105.0
    tokens.note_input("a")
    assert tokens.last_input("a") == 105.0
    tokens.close("a")
    assert tokens.last_input("a") is None


def test_key_holder_switch_and_forget() -> None:
    tokens = TakeoverTokens()
    assert not tokens.key_holder_control("a")
    tokens.set_key_holder_control("a", True)
    token = tokens.open("a")
    assert tokens.key_holder_control("a")
    tokens.forget("a")
    assert not tokens.key_holder_control("a") and not tokens.allows("a", token)
