"""Replaying a cached script in the slot's script host (spec §27.3, §24.1): never in this process.

The script's steps, with this run's parameters filled in, are handed to a fixed Python program as JSON data; it
runs in the session's script host (the slot's sandbox) and drives the agent's tab through ``browser``. Each step
waits for its element (up to :data:`STEP_WAIT`), a step that navigated in the first run waits for the new page,
and the output's elements are read at the end. A step that cannot be done stops the script with a line naming it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from openbrowse.agent.cache.script import CachedScript, fill, render_output
from openbrowse.domain.scripts import ScriptCallError, ScriptEnd, ScriptRun, ScriptRunner

__all__ = ["REPLAY_LIMIT", "Replay", "replay", "replay_source"]

STEP_WAIT = 10.0
REPLAY_LIMIT = 120.0
RESULT_MARK = "OPENBROWSE_CACHE_RESULT "
FAILED_MARK = "OPENBROWSE_CACHE_FAILED "

_PROGRAM = r"""
import asyncio, json
STEPS = json.loads(__STEPS__)
ELEMENTS = json.loads(__ELEMENTS__)
WAIT = __WAIT__
FIND = "document.evaluate(%s, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue"
CLICK = ("(() => { const el = " + FIND + "; if (!el) return false; el.scrollIntoView({block: 'center'}); "
         "el.click(); return true; })()")
TYPE = ("(() => { const el = " + FIND + "; if (!el) return false; el.focus(); const proto = el instanceof "
        "HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype; "
        "Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, %s); "
        "el.dispatchEvent(new Event('input', {bubbles: true})); "
        "el.dispatchEvent(new Event('change', {bubbles: true})); return true; })()")
SELECT = ("(() => { const el = " + FIND + "; if (!el) return false; const option = Array.from(el.options || []).find("
          "(o) => o.text.trim() === %s || o.value === %s); if (!option) return false; el.value = option.value; "
          "el.dispatchEvent(new Event('change', {bubbles: true})); return true; })()")
READ = ("(() => { const out = []; for (const xp of %s) { const el = " + (FIND % "xp") + "; if (!el) return null; "
        "out.push((el.innerText || el.textContent || '').trim()); } return out; })()")

async def until(js):
    deadline = asyncio.get_running_loop().time() + WAIT
    while True:
        try:
            value = await browser.evaluate(js)
        except Exception:
            value = None
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            return None
        await asyncio.sleep(0.05)

async def settled(before):
    deadline = asyncio.get_running_loop().time() + WAIT
    while asyncio.get_running_loop().time() < deadline:
        try:
            if await browser.url() != before and await browser.evaluate("document.readyState") == "complete":
                return
        except Exception:
            pass
        await asyncio.sleep(0.05)

for number, step in enumerate(STEPS, 1):
    kind, xp, what = step["kind"], json.dumps(step.get("xpath", "")), step["describe"]
    try:
        before = await browser.url()
        if kind == "navigate":
            await browser.navigate(step["url"])
            done = True
        elif kind == "click":
            done = await until(CLICK % xp)
        elif kind == "type":
            done = await until(TYPE % (xp, json.dumps(step["text"])))
        else:
            done = await until(SELECT % (xp, json.dumps(step["text"]), json.dumps(step["text"])))
        if done and step.get("navigates"):
            await settled(before)
    except Exception as exc:
        print("__FAILED__" + json.dumps({"step": what, "error": str(exc)[:300]}))
        raise RuntimeError(what + ' failed')
    if not done:
        print("__FAILED__" + json.dumps({"step": what, "error": "the element it needs is not on the page"}))
        raise RuntimeError(what + ' failed')
texts = await until(READ % json.dumps(ELEMENTS)) if ELEMENTS else []
if texts is None:
    missing = "an element the output comes from is not on the page"
    print("__FAILED__" + json.dumps({"step": "reading the output", "error": missing}))
    raise RuntimeError('reading the output failed')
print("__RESULT__" + json.dumps(texts))
"""


@dataclass(frozen=True, slots=True)
class Replay:
    output: Any = None
    failed_step: str | None = None
    """What failed, in words (``step 2 (click button 'Go')``), or None when the script ran to its end."""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.failed_step is None


def replay_source(script: CachedScript, values: Sequence[str]) -> str:
    """The program the script host runs: fixed code, the steps (parameters filled in) as JSON data."""
    steps = [
        {
            "kind": step.kind,
            "url": fill(step.url, values),
            "xpath": step.xpath,
            "text": fill(step.text, values),
            "navigates": step.navigates,
            "describe": step.describe(number),
        }
        for number, step in enumerate(script.steps, 1)
    ]
    return (
        _PROGRAM.replace("__STEPS__", repr(json.dumps(steps, ensure_ascii=False)))
        .replace("__ELEMENTS__", repr(json.dumps(list(script.elements), ensure_ascii=False)))
        .replace("__WAIT__", repr(STEP_WAIT))
        .replace("__FAILED__", FAILED_MARK)
        .replace("__RESULT__", RESULT_MARK)
    )


async def _no_calls(method: str, _args: dict[str, Any]) -> Any:
    raise ScriptCallError("PermissionError", f"a cached script calls no helper ({method})")


def _marked(stdout: str, mark: str) -> Any:
    for line in reversed(stdout.splitlines()):
        if line.startswith(mark):
            try:
                return json.loads(line[len(mark) :])
            except ValueError:
                return None
    return None


async def replay(
    runner: ScriptRunner, owner: str, target_id: str | None, script: CachedScript, values: Sequence[str], name: str
) -> Replay:
    """Run ``script`` with ``values`` in the session's script host; the output, or the step that failed."""
    request = ScriptRun(
        owner=owner,
        source=replay_source(script, values),
        filename=f"scripts/{name}.py",
        target_id=target_id,
        limit=REPLAY_LIMIT,
    )
    outcome = await runner.run(request, _no_calls)
    texts = _marked(outcome.stdout, RESULT_MARK)
    if outcome.end is ScriptEnd.FINISHED and isinstance(texts, list):
        return Replay(output=render_output(script.output, values, [str(text) for text in texts]))
    failure = _marked(outcome.stdout, FAILED_MARK)
    if isinstance(failure, dict):
        return Replay(failed_step=str(failure.get("step")), error=str(failure.get("error")))
    return Replay(failed_step="the script", error=outcome.error or f"the script ended {outcome.end.value}")
