"""Putting a CapSolver solution into the page: the script per CAPTCHA kind, and the image grab for image CAPTCHAs."""

from __future__ import annotations

import json
from typing import Any

from openbrowse.agent.captcha.detect import CaptchaKind, Finding

# Sets a field's value the way a user would (native setter, then input/change events).
_SET_VALUE = r"""
const setValue = (el, value) => {
  const proto = el.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  const setter = Object.getOwnPropertyDescriptor(proto, 'value').set;
  setter.call(el, value);
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
};
const fill = (selector, value) => {
  let n = 0;
  for (const el of document.querySelectorAll(selector)) { setValue(el, value); n++; }
  return n;
};
const callNamed = (name, value) => {
  if (!name) return '';
  const fn = name.split('.').reduce((o, k) => (o ? o[k] : undefined), window);
  if (typeof fn !== 'function') return '';
  try { fn(value); return name; } catch (e) { return name + ' (threw: ' + e + ')'; }
};
"""

_RECAPTCHA = r"""
(token) => {
  const filled = fill('textarea[name="g-recaptcha-response"], textarea.g-recaptcha-response, ' +
    'textarea[id^="g-recaptcha-response"]', token);
  const called = [];
  for (const el of document.querySelectorAll('[data-sitekey][data-callback]')) {
    const name = callNamed(el.getAttribute('data-callback'), token);
    if (name) called.push(name);
  }
  if (!called.length && window.___grecaptcha_cfg && window.___grecaptcha_cfg.clients) {
    const seen = new Set();
    const walk = (obj, depth) => {
      if (!obj || typeof obj !== 'object' || depth > 5 || seen.has(obj)) return;
      seen.add(obj);
      for (const [key, value] of Object.entries(obj)) {
        if (key === 'callback' && typeof value === 'function') {
          try { value(token); called.push('grecaptcha client callback'); } catch (e) {}
          return;
        }
        walk(value, depth + 1);
      }
    };
    for (const client of Object.values(window.___grecaptcha_cfg.clients)) walk(client, 0);
  }
  return {filled, called};
}
"""

_TURNSTILE = r"""
(token) => {
  const filled = fill('input[name="cf-turnstile-response"], textarea[name="cf-turnstile-response"]', token);
  const called = [];
  for (const el of document.querySelectorAll('.cf-turnstile[data-callback], [data-sitekey][data-callback]')) {
    const name = callNamed(el.getAttribute('data-callback'), token);
    if (name) called.push(name);
  }
  return {filled, called};
}
"""

_FIELDS = r"""
(values) => {
  let filled = 0;
  for (const [name, value] of Object.entries(values)) {
    filled += fill(`input[name="${name}"], input[id="${name}"]`, String(value));
  }
  return {filled, called: []};
}
"""

_AWS_COOKIE = r"""
(cookie) => {
  const pair = cookie.includes('=') ? cookie : 'aws-waf-token=' + cookie;
  document.cookie = pair.split(';')[0] + '; path=/';
  setTimeout(() => location.reload(), 50);
  return {filled: 1, called: ['page reload']};
}
"""

_ANSWER = r"""
(args) => ({filled: fill(args.selector, args.text), called: []})
"""


def injection(finding: Finding, solution: dict[str, Any]) -> tuple[str, str] | None:
    """The script (an expression) putting ``solution`` into the page, and a one-line description of the answer.

    None when the solution lacks the field this kind needs.
    """
    kind = finding.kind
    body: str
    argument: Any
    if kind in (CaptchaKind.RECAPTCHA_V2, CaptchaKind.RECAPTCHA_V3):
        body, argument, what = _RECAPTCHA, solution.get("gRecaptchaResponse"), "token"
    elif kind is CaptchaKind.TURNSTILE:
        body, argument, what = _TURNSTILE, solution.get("token"), "token"
    elif kind is CaptchaKind.MTCAPTCHA:
        body, argument, what = _FIELDS, {"mtcaptcha-verifiedtoken": solution.get("token")}, "token"
        if not solution.get("token"):
            argument = None
    elif kind in (CaptchaKind.GEETEST_V3, CaptchaKind.GEETEST_V4):
        body, argument, what = _FIELDS, _geetest_fields(kind, solution), "GeeTest validation values"
    elif kind is CaptchaKind.AWS_WAF:
        body, argument, what = _AWS_COOKIE, solution.get("cookie"), "aws-waf-token cookie"
    elif kind is CaptchaKind.IMAGE:
        text = solution.get("text")
        argument = {"selector": finding.answer_selector, "text": text} if text else None
        body, what = _ANSWER, f"answer {str(text)!r}"
    else:
        return None
    if not argument:
        return None
    script = f"(() => {{ {_SET_VALUE} return ({body})({json.dumps(argument)}); }})()"
    return script, what


def _geetest_fields(kind: CaptchaKind, solution: dict[str, Any]) -> dict[str, str] | None:
    if kind is CaptchaKind.GEETEST_V3:
        names = {"geetest_challenge": "challenge", "geetest_validate": "validate", "geetest_seccode": "seccode"}
    else:
        names = {n: n for n in ("captcha_id", "lot_number", "pass_token", "gen_time", "captcha_output")}
    values = {field: str(solution[key]) for field, key in names.items() if solution.get(key)}
    return values or None


def image_grab(selector: str) -> str:
    """An expression returning the image as base64 PNG via a canvas, or its box when the canvas is tainted."""
    return f"""
(async () => {{
  const img = document.querySelector({json.dumps(selector)});
  if (!img) return {{error: 'no element matches the image selector'}};
  if (img.tagName === 'IMG' && !img.complete) await new Promise(r => {{ img.onload = r; img.onerror = r; }});
  try {{
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth || img.width; canvas.height = img.naturalHeight || img.height;
    canvas.getContext('2d').drawImage(img, 0, 0);
    return {{base64: canvas.toDataURL('image/png').split(',')[1]}};
  }} catch (e) {{
    img.scrollIntoView({{block: 'center'}});
    const r = img.getBoundingClientRect();
    return {{box: {{x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height}}}};
  }}
}})()
"""
