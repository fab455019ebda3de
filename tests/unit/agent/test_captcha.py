"""The pure parts of solve_captcha: detection from probe facts, hints, CapSolver tasks, costs and refusals."""

from __future__ import annotations

from decimal import Decimal

import pytest

from openbrowse.agent.captcha.capsolver import CapSolverSettings, SolveResult, cost_of, task_for
from openbrowse.agent.captcha.detect import CaptchaKind, Finding, choose, findings_of, from_resource_url
from openbrowse.agent.captcha.inject import injection
from openbrowse.agent.tools.captcha_solver import CaptchaSolver

PAGE = "https://shop.example/login"
KEY = "6LcKeyKeyKeyKeyKeyKeyKeyKeyKeyKeyKeyKeyK"


def test_recaptcha_widget_with_its_site_key_and_callback_page() -> None:
    facts = {
        "url": PAGE,
        "widgets": [{"className": "g-recaptcha", "sitekey": KEY, "size": "", "action": ""}],
        "recaptchaTextareas": 1,
    }
    assert findings_of(facts) == [Finding(CaptchaKind.RECAPTCHA_V2, PAGE, site_key=KEY)]


def test_site_key_comes_from_the_anchor_frame_when_the_widget_has_none() -> None:
    facts = {
        "url": PAGE,
        "widgets": [],
        "recaptchaTextareas": 1,
        "resources": [f"https://www.google.com/recaptcha/enterprise/anchor?ar=1&k={KEY}&size=invisible"],
    }
    chosen = choose(findings_of(facts), page_url=PAGE)
    assert chosen is not None and chosen.kind is CaptchaKind.RECAPTCHA_V2
    assert chosen.site_key == KEY and chosen.enterprise and chosen.invisible
    assert chosen.missing() is None


def test_v3_render_parameter_turnstile_geetest_and_named_only_kinds() -> None:
    v3 = from_resource_url(f"https://www.google.com/recaptcha/api.js?render={KEY}", PAGE)
    assert v3 == Finding(CaptchaKind.RECAPTCHA_V3, PAGE, site_key=KEY)
    assert from_resource_url("https://www.google.com/recaptcha/api.js?render=explicit", PAGE) is None
    turnstile = from_resource_url(
        "https://challenges.cloudflare.com/cdn-cgi/challenge-platform/turnstile/if/ov2/av0/rcv0/0/0x4AAAAAAAB/light",
        PAGE,
    )
    assert turnstile is not None and turnstile.site_key == "0x4AAAAAAAB"
    v4 = from_resource_url("https://gcaptcha4.geetest.com/load?captcha_id=abc123&client_type=web", PAGE)
    assert v4 == Finding(CaptchaKind.GEETEST_V4, PAGE, site_key="abc123")
    v3gt = from_resource_url("https://api.geetest.com/get.php?gt=gtkey&challenge=ch1", PAGE)
    assert v3gt == Finding(CaptchaKind.GEETEST_V3, PAGE, site_key="gtkey", challenge="ch1")
    hcaptcha = from_resource_url("https://newassets.hcaptcha.com/captcha/v1/x/static/hcaptcha.html#sitekey=1", PAGE)
    assert hcaptcha is not None and hcaptcha.kind is CaptchaKind.HCAPTCHA
    datadome = from_resource_url("https://geo.captcha-delivery.com/captcha/?initialCid=x", PAGE)
    assert datadome is not None and datadome.label == "DataDome"


def test_solvable_kinds_win_over_named_only_ones_and_hints_override() -> None:
    facts = {
        "url": PAGE,
        "widgets": [
            {"className": "h-captcha", "sitekey": "h-key"},
            {"className": "cf-turnstile", "sitekey": "0x4AAA", "action": "login", "cdata": "c1"},
        ],
    }
    found = findings_of(facts)
    chosen = choose(found, page_url=PAGE)
    assert chosen == Finding(CaptchaKind.TURNSTILE, PAGE, site_key="0x4AAA", action="login", cdata="c1")
    hinted = choose(found, page_url=PAGE, hint_type="turnstile", hint_site_key="0x4BBB")
    assert hinted is not None and hinted.site_key == "0x4BBB"
    only_hcaptcha = choose(findings_of({"url": PAGE, "widgets": [{"className": "h-captcha"}]}), page_url=PAGE)
    assert only_hcaptcha is not None and only_hcaptcha.kind is CaptchaKind.HCAPTCHA
    assert choose([], page_url=PAGE) is None


def test_missing_runtime_parameters_are_named() -> None:
    assert Finding(CaptchaKind.RECAPTCHA_V2, PAGE).missing() == "the site key (pass hint_site_key)"
    assert Finding(CaptchaKind.GEETEST_V3, PAGE, site_key="gt").missing() == "the GeeTest challenge"
    image = choose(
        findings_of({"url": PAGE, "imageSelector": "#cap"}), page_url=PAGE, hint_answer_selector="input[name=code]"
    )
    assert image is not None and image.kind is CaptchaKind.IMAGE and image.missing() is None
    assert Finding(CaptchaKind.IMAGE, PAGE, image_selector="#cap").missing() is not None
    assert Finding(CaptchaKind.AWS_WAF, PAGE, aws={"key": "k"}).missing() == "the AWS WAF challenge values"


def test_tasks_match_the_capsolver_task_types() -> None:
    enterprise = Finding(CaptchaKind.RECAPTCHA_V2, PAGE, site_key=KEY, enterprise=True, invisible=True)
    assert task_for(enterprise) == {
        "type": "ReCaptchaV2EnterpriseTaskProxyLess",
        "websiteURL": PAGE,
        "websiteKey": KEY,
        "isInvisible": True,
    }
    v3 = task_for(Finding(CaptchaKind.RECAPTCHA_V3, PAGE, site_key=KEY))
    assert v3["type"] == "ReCaptchaV3TaskProxyLess" and v3["pageAction"] == "verify"
    turnstile = task_for(Finding(CaptchaKind.TURNSTILE, PAGE, site_key="0x4", action="login"))
    assert turnstile == {
        "type": "AntiTurnstileTaskProxyLess",
        "websiteURL": PAGE,
        "websiteKey": "0x4",
        "metadata": {"action": "login"},
    }
    assert task_for(Finding(CaptchaKind.MTCAPTCHA, PAGE, site_key="MTPublic"))["type"] == "MtCaptchaTaskProxyLess"
    assert task_for(Finding(CaptchaKind.GEETEST_V4, PAGE, site_key="id"))["captchaId"] == "id"
    aws = task_for(Finding(CaptchaKind.AWS_WAF, PAGE, aws={"key": "k", "iv": "i", "context": "c"}))
    assert aws["type"] == "AntiAwsWafTaskProxyLess" and aws["awsIv"] == "i"
    assert task_for(Finding(CaptchaKind.IMAGE, PAGE), "QUJD")["body"] == "QUJD"
    with pytest.raises(ValueError, match="never attempted"):
        task_for(Finding(CaptchaKind.HCAPTCHA, PAGE))


def test_cost_is_read_from_the_reply() -> None:
    assert cost_of({"cost": "0.0012"}) == Decimal("0.0012")
    assert cost_of({"cost": 0.002}) == Decimal("0.002")
    assert cost_of({}) == 0
    assert cost_of({"cost": "n/a"}) == 0
    assert cost_of({"cost": True}) == 0


def test_injection_needs_the_answer_field_of_the_solution() -> None:
    recaptcha = Finding(CaptchaKind.RECAPTCHA_V2, PAGE, site_key=KEY)
    planned = injection(recaptcha, {"gRecaptchaResponse": "tok"})
    assert planned is not None and '"tok"' in planned[0]
    assert injection(recaptcha, {"token": "tok"}) is None
    image = injection(Finding(CaptchaKind.IMAGE, PAGE, answer_selector="#a"), {"text": "x7k"})
    assert image is not None and image[1] == "answer 'x7k'"


async def test_ceiling_per_run_and_two_failures_per_host() -> None:
    spent: list[Decimal] = []

    async def on_spend(usd: Decimal) -> None:
        spent.append(usd)

    solver = CaptchaSolver(CapSolverSettings(api_key="k", max_cost_usd=Decimal("0.003")), on_spend)
    assert solver.refusal("a.example") is None
    await solver.record("a.example", SolveResult(None, Decimal("0.001"), error="unsolvable"))
    await solver.record("a.example", SolveResult(None, Decimal(0), error="unsolvable"))
    assert "Two CAPTCHA solves on a.example already failed" in (solver.refusal("a.example") or "")
    assert solver.refusal("b.example") is None
    await solver.record("b.example", SolveResult({"token": "t"}, Decimal("0.002")))
    assert "reached the $0.003 ceiling" in (solver.refusal("b.example") or "")
    assert spent == [Decimal("0.001"), Decimal("0.002")]
    solver.new_turn()
    assert solver.refusal("b.example") is None

    uncapped = CaptchaSolver(CapSolverSettings(api_key="k", max_cost_usd=Decimal(0)), on_spend)
    await uncapped.record("c.example", SolveResult({"token": "t"}, Decimal("5")))
    assert uncapped.refusal("c.example") is None
