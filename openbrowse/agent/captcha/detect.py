"""CAPTCHA detection (spec §11.6): the probe run in a page and its frames, and the pure parsing of what it saw.

The probe only reports raw facts (widget attributes, resource URLs, page globals); which CAPTCHA that is, and
whether everything a solve needs is present, is decided here in Python so it can be tested without a browser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any
from urllib.parse import parse_qs, urlsplit


class CaptchaKind(StrEnum):
    RECAPTCHA_V2 = "recaptcha_v2"
    RECAPTCHA_V3 = "recaptcha_v3"
    TURNSTILE = "turnstile"
    GEETEST_V3 = "geetest_v3"
    GEETEST_V4 = "geetest_v4"
    MTCAPTCHA = "mtcaptcha"
    AWS_WAF = "aws_waf"
    IMAGE = "image_to_text"
    HCAPTCHA = "hcaptcha"
    DATADOME = "datadome"


NEVER_ATTEMPTED = frozenset({CaptchaKind.HCAPTCHA, CaptchaKind.DATADOME})
LABELS = {
    CaptchaKind.RECAPTCHA_V2: "reCAPTCHA v2",
    CaptchaKind.RECAPTCHA_V3: "reCAPTCHA v3",
    CaptchaKind.TURNSTILE: "Cloudflare Turnstile",
    CaptchaKind.GEETEST_V3: "GeeTest v3",
    CaptchaKind.GEETEST_V4: "GeeTest v4",
    CaptchaKind.MTCAPTCHA: "MTCaptcha",
    CaptchaKind.AWS_WAF: "AWS WAF",
    CaptchaKind.IMAGE: "image CAPTCHA",
    CaptchaKind.HCAPTCHA: "hCaptcha",
    CaptchaKind.DATADOME: "DataDome",
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One CAPTCHA seen on the page, with the runtime parameters a solve needs (empty when not found)."""

    kind: CaptchaKind
    page_url: str
    site_key: str = ""
    enterprise: bool = False
    invisible: bool = False
    action: str = ""
    cdata: str = ""
    challenge: str = ""  # GeeTest v3
    aws: dict[str, str] | None = None  # AWS WAF: key, iv, context, challengeScript
    image_selector: str = ""
    answer_selector: str = ""

    @property
    def label(self) -> str:
        return LABELS[self.kind] + (" Enterprise" if self.enterprise else "")

    def missing(self) -> str | None:
        """The runtime parameter a solve needs that is absent, as a phrase; None when the solve can go ahead."""
        if self.kind is CaptchaKind.IMAGE:
            if not self.image_selector:
                return "the CAPTCHA image (pass hint_image_selector)"
            if not self.answer_selector:
                return "the answer field (pass hint_answer_selector)"
            return None
        if self.kind is CaptchaKind.AWS_WAF:
            aws = self.aws or {}
            return None if aws.get("key") and aws.get("iv") and aws.get("context") else "the AWS WAF challenge values"
        if not self.site_key:
            return "the site key (pass hint_site_key)"
        if self.kind is CaptchaKind.GEETEST_V3 and not self.challenge:
            return "the GeeTest challenge"
        return None


def from_resource_url(url: str, page_url: str) -> Finding | None:
    """A CAPTCHA named by a frame or script URL (the reCAPTCHA anchor's ``k=``, a Turnstile frame's key...)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    query = {key: values[0] for key, values in parse_qs(parts.query).items() if values}
    path = parts.path
    if ("google.com" in host or "recaptcha.net" in host) and "/recaptcha/" in path:
        enterprise = "/enterprise" in path
        if "/anchor" in path or "/bframe" in path:
            size = query.get("size", "")
            return Finding(
                CaptchaKind.RECAPTCHA_V2,
                page_url,
                site_key=query.get("k", ""),
                enterprise=enterprise,
                invisible=size == "invisible",
            )
        render = query.get("render", "")
        if render and render != "explicit":
            return Finding(CaptchaKind.RECAPTCHA_V3, page_url, site_key=render, enterprise=enterprise)
        return None
    if host == "challenges.cloudflare.com" and "turnstile" in path:
        key = next((segment for segment in path.split("/") if segment.startswith("0x")), "")
        return Finding(CaptchaKind.TURNSTILE, page_url, site_key=key)
    if host.endswith("hcaptcha.com"):
        return Finding(CaptchaKind.HCAPTCHA, page_url, site_key=query.get("sitekey", ""))
    if host.endswith("captcha-delivery.com"):
        return Finding(CaptchaKind.DATADOME, page_url)
    if host.endswith("geetest.com"):
        if "captcha_id" in query:
            return Finding(CaptchaKind.GEETEST_V4, page_url, site_key=query["captcha_id"])
        if "gt" in query:
            return Finding(CaptchaKind.GEETEST_V3, page_url, site_key=query["gt"], challenge=query.get("challenge", ""))
    if host.endswith("mtcaptcha.com") and "sk" in query:
        return Finding(CaptchaKind.MTCAPTCHA, page_url, site_key=query["sk"])
    return None


def _widget_finding(widget: dict[str, Any], page_url: str, facts: dict[str, Any]) -> Finding | None:
    classes = str(widget.get("className") or "")
    key = str(widget.get("sitekey") or "")
    action = str(widget.get("action") or "")
    if "cf-turnstile" in classes or key.startswith("0x4"):
        return Finding(
            CaptchaKind.TURNSTILE, page_url, site_key=key, action=action, cdata=str(widget.get("cdata") or "")
        )
    if "h-captcha" in classes:
        return Finding(CaptchaKind.HCAPTCHA, page_url, site_key=key)
    if "mtcaptcha" in classes:
        return Finding(CaptchaKind.MTCAPTCHA, page_url, site_key=key)
    if "g-recaptcha" in classes or key or facts.get("recaptchaTextareas"):
        return Finding(
            CaptchaKind.RECAPTCHA_V2,
            page_url,
            site_key=key,
            enterprise=bool(facts.get("recaptchaEnterprise")),
            invisible=widget.get("size") == "invisible",
            action=action,
        )
    return None


def findings_of(facts: dict[str, Any]) -> list[Finding]:
    """Everything one document's probe result names, most specific (widgets) first."""
    page_url = str(facts.get("url") or "")
    found: list[Finding] = []
    for widget in facts.get("widgets") or []:
        if isinstance(widget, dict):
            finding = _widget_finding(widget, page_url, facts)
            if finding is not None:
                found.append(finding)
    if facts.get("recaptchaTextareas") and not any(f.kind is CaptchaKind.RECAPTCHA_V2 for f in found):
        found.append(Finding(CaptchaKind.RECAPTCHA_V2, page_url, enterprise=bool(facts.get("recaptchaEnterprise"))))
    if facts.get("turnstileInputs") and not any(f.kind is CaptchaKind.TURNSTILE for f in found):
        found.append(Finding(CaptchaKind.TURNSTILE, page_url))
    mtcaptcha = facts.get("mtcaptchaSitekey")
    if mtcaptcha:
        found.append(Finding(CaptchaKind.MTCAPTCHA, page_url, site_key=str(mtcaptcha)))
    aws = facts.get("aws")
    if isinstance(aws, dict) and aws:
        found.append(Finding(CaptchaKind.AWS_WAF, page_url, aws={k: str(v) for k, v in aws.items()}))
    for url in facts.get("resources") or []:
        finding = from_resource_url(str(url), page_url)
        if finding is not None:
            found.append(finding)
    if facts.get("hcaptcha"):
        found.append(Finding(CaptchaKind.HCAPTCHA, page_url))
    if facts.get("datadome"):
        found.append(Finding(CaptchaKind.DATADOME, page_url))
    image = str(facts.get("imageSelector") or "")
    if image:
        found.append(
            Finding(
                CaptchaKind.IMAGE,
                page_url,
                image_selector=image,
                answer_selector=str(facts.get("answerSelector") or ""),
            )
        )
    return found


def _merge(first: Finding, other: Finding) -> Finding:
    """Fill what ``first`` lacks from a later finding of the same kind (a frame URL often carries the key)."""
    return replace(
        first,
        site_key=first.site_key or other.site_key,
        enterprise=first.enterprise or other.enterprise,
        invisible=first.invisible or other.invisible,
        challenge=first.challenge or other.challenge,
    )


def consolidate(findings: Sequence[Finding]) -> list[Finding]:
    """One finding per kind, in first-seen order, each completed from the later ones of its kind."""
    merged: dict[CaptchaKind, Finding] = {}
    for finding in findings:
        merged[finding.kind] = _merge(merged[finding.kind], finding) if finding.kind in merged else finding
    return list(merged.values())


def choose(
    findings: Sequence[Finding],
    *,
    page_url: str,
    hint_type: str | None = None,
    hint_site_key: str | None = None,
    hint_image_selector: str | None = None,
    hint_answer_selector: str | None = None,
) -> Finding | None:
    """The CAPTCHA to solve: the hinted type (completed by detection), else the first solvable one, else the
    first named one (e.g. hCaptcha, so it can be reported). Hints override what the probe found."""
    found = consolidate(findings)
    chosen: Finding | None
    if hint_type:
        kind = CaptchaKind(hint_type)
        chosen = next((f for f in found if f.kind is kind), Finding(kind, page_url))
    else:
        solvable = [f for f in found if f.kind not in NEVER_ATTEMPTED and f.kind is not CaptchaKind.IMAGE]
        chosen = next(iter(solvable or found), None)
        if chosen is None and (hint_image_selector or hint_site_key):
            kind = CaptchaKind.IMAGE if hint_image_selector else CaptchaKind.RECAPTCHA_V2
            chosen = Finding(kind, page_url)
    if chosen is None:
        return None
    return replace(
        chosen,
        site_key=hint_site_key or chosen.site_key,
        image_selector=hint_image_selector or chosen.image_selector,
        answer_selector=hint_answer_selector or chosen.answer_selector,
    )


# Raw facts about one document; evaluated in the page and in each embedded frame.
PROBE = r"""
(() => {
  const all = (s) => { try { return Array.from(document.querySelectorAll(s)); } catch (e) { return []; } };
  const mark = (el, role) => {
    el.setAttribute('data-openbrowse-captcha', role);
    return `[data-openbrowse-captcha="${role}"]`;
  };
  const widgets = all('[data-sitekey], .g-recaptcha, .cf-turnstile, .h-captcha, .mtcaptcha').map(el => ({
    className: String(el.className || ''), sitekey: el.getAttribute('data-sitekey') || '',
    size: el.getAttribute('data-size') || '', action: el.getAttribute('data-action') || '',
    cdata: el.getAttribute('data-cdata') || '', callback: el.getAttribute('data-callback') || ''}));
  const urls = [...all('iframe[src]').map(f => f.src), ...all('script[src]').map(s => s.src)];
  try { for (const e of performance.getEntriesByType('resource')) urls.push(e.name); } catch (e) {}
  const pattern = /recaptcha|turnstile|hcaptcha|captcha-delivery|geetest|mtcaptcha|awswaf/i;
  const resources = [...new Set(urls.filter(u => pattern.test(u)))].slice(0, 60);
  const g = window.grecaptcha;
  let aws = null;
  if (window.gokuProps) {
    const script = all('script[src]').map(s => s.src).find(u => /awswaf|challenge\.js/i.test(u)) || '';
    aws = {key: gokuProps.key || '', iv: gokuProps.iv || '', context: gokuProps.context || '', challengeScript: script};
  }
  let imageSelector = '', answerSelector = '';
  const words = /captcha|verification.?code|security.?code/i;
  const img = all('img').find(i => words.test([i.src, i.id, i.className, i.alt, i.name].join(' ')));
  if (img) imageSelector = mark(img, 'image');
  const field = all('input[type=text], input:not([type])').find(i =>
    words.test([i.name, i.id, i.className, i.placeholder, i.getAttribute('aria-label')].join(' ')));
  if (field) answerSelector = mark(field, 'answer');
  return {
    url: location.href, widgets, resources, aws, imageSelector, answerSelector,
    recaptchaTextareas: all('textarea[name="g-recaptcha-response"], textarea.g-recaptcha-response').length,
    recaptchaEnterprise: !!(g && g.enterprise) || resources.some(u => /recaptcha\/enterprise/.test(u)),
    turnstileInputs: all('input[name="cf-turnstile-response"]').length,
    mtcaptchaSitekey: (window.mtcaptchaConfig && window.mtcaptchaConfig.sitekey) || '',
    hcaptcha: !!window.hcaptcha,
    datadome: !!(window.dd && window.dd.cid) || all('script[src*="captcha-delivery.com"]').length > 0,
  };
})()
"""
