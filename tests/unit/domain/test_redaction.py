"""The one redactor (spec §25.3): values and the encodings a page sees them in become ``<secret>name</secret>``."""

from __future__ import annotations

import base64
import html
import io
import json
import logging
from urllib.parse import quote, quote_plus

import pytest

from openbrowse.domain.redaction import REDACTORS, Redactor, RedactorRegistry
from openbrowse.logs import SessionIdFilter

SECRET = "S3cr3t pa55/word+&ü"


@pytest.mark.parametrize(
    "spelling",
    [
        SECRET,
        quote(SECRET, safe=""),
        quote(SECRET),
        quote_plus(SECRET),
        html.escape(SECRET),
        json.dumps(SECRET)[1:-1],
        base64.b64encode(SECRET.encode()).decode(),
        base64.urlsafe_b64encode(SECRET.encode()).decode().rstrip("="),
    ],
)
def test_each_spelling_is_hidden(spelling: str) -> None:
    redactor = Redactor({SECRET: "pw"})
    assert redactor.text(f"before {spelling} after") == "before <secret>pw</secret> after"


@pytest.mark.parametrize("prefix", ["", "u", "us", "use", "user:"])
def test_the_value_is_hidden_inside_a_longer_base64(prefix: str) -> None:
    encoded = base64.b64encode(f"{prefix}{SECRET}!".encode()).decode()
    hidden = Redactor({SECRET: "pw"}).text(encoded)
    assert "<secret>pw</secret>" in hidden
    assert all(core not in hidden for core in (encoded[4:-4],))


def test_values_inside_data_and_bytes() -> None:
    redactor = Redactor({SECRET: "pw", "tok-123456": "token"})
    data = {"a": [f"x{SECRET}", {"k": "tok-123456"}], SECRET: 1, "n": 3}
    assert redactor.value(data) == {
        "a": ["x<secret>pw</secret>", {"k": "<secret>token</secret>"}],
        "<secret>pw</secret>": 1,
        "n": 3,
    }
    assert redactor.data(f"--{SECRET}--".encode()) == b"--<secret>pw</secret>--"
    assert not Redactor({}) and Redactor({}).text(SECRET) == SECRET


def test_the_registry_keeps_each_sessions_values_and_all_of_them_for_the_log() -> None:
    registry = RedactorRegistry()
    registry.add("a", {"alpha-secret": "pw"})
    registry.add("b", {"beta-secret": "pw"})
    registry.add("a", {"gamma-secret": "otp"})
    assert registry.of("a").text("alpha-secret beta-secret gamma-secret") == (
        "<secret>pw</secret> beta-secret <secret>otp</secret>"
    )
    assert registry.everyone.text("alpha-secret beta-secret") == "<secret>pw</secret> <secret>pw</secret>"
    registry.drop("a")
    assert (
        not registry.of("a")
        and registry.everyone.text("alpha-secret beta-secret") == "alpha-secret <secret>pw</secret>"
    )


def test_the_log_hides_every_sessions_secrets_in_messages_and_tracebacks() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler.addFilter(SessionIdFilter())
    logger = logging.getLogger("tests.redaction")
    logger.addHandler(handler)
    logger.propagate = False
    REDACTORS.add("log-session", {SECRET: "pw"})
    try:
        logger.warning("typed %s on %s", SECRET, f"https://x.test/?q={quote_plus(SECRET)}")
        try:
            raise ValueError(f"bad value {SECRET}")
        except ValueError:
            logger.exception("failed")
        logging.getLogger("browser_use.Agent🅰 1").warning("⚠️ Agent(sensitive_data=••) ... is not locked down! ⚠️")
    finally:
        REDACTORS.drop("log-session")
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert SECRET not in text and quote_plus(SECRET) not in text
    assert "typed <secret>pw</secret> on https://x.test/?q=<secret>pw</secret>" in text
    assert "ValueError: bad value <secret>pw</secret>" in text
    assert "locked down" not in text
