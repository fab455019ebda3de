"""``solve_captcha(hint_type?, hint_site_key?, hint_answer_selector?, hint_image_selector?)`` (spec §11.6).

Registered only with a CapSolver key. The page probe decides what the CAPTCHA is; the hints override it. Every
refusal that needs no solver (nothing found, a type never attempted, a missing parameter, the per-run ceiling,
two failures on the host) happens before any spend. Each solve's reported cost goes to the session at once.
"""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from browser_use import BrowserSession
from browser_use.agent.views import ActionResult
from pydantic import BaseModel, Field

from openbrowse.agent.captcha.capsolver import CapSolverClient, task_for
from openbrowse.agent.captcha.detect import (
    LABELS,
    NEVER_ATTEMPTED,
    PROBE,
    CaptchaKind,
    Finding,
    choose,
    findings_of,
)
from openbrowse.agent.captcha.inject import image_grab, injection
from openbrowse.agent.pages.cdp import FrameRef, PageScriptError, evaluate, evaluate_in_frame, frames_of
from openbrowse.agent.tools.captcha_solver import CaptchaSolver
from openbrowse.domain.feed import EventCategory
from openbrowse.domain.money import format_usd

if TYPE_CHECKING:
    from browser_use import Tools

    from openbrowse.agent.tools.context import ToolContext

PROBE_TIMEOUT = 10.0
HintType = Literal[
    "recaptcha_v2", "recaptcha_v3", "turnstile", "geetest_v3", "geetest_v4", "mtcaptcha", "aws_waf", "image_to_text"
]


class CaptchaRefused(RuntimeError):
    """The solve was not attempted; nothing was spent."""


class SolveCaptchaParams(BaseModel):
    hint_type: HintType | None = Field(default=None, description="Override the detected CAPTCHA type.")
    hint_site_key: str | None = Field(default=None, description="Override the detected site key.")
    hint_answer_selector: str | None = Field(
        default=None, description="CSS selector of the field for an image CAPTCHA's answer."
    )
    hint_image_selector: str | None = Field(default=None, description="CSS selector of an image CAPTCHA's picture.")


Document = tuple[FrameRef | None, dict[str, Any]]


async def _probe(browser: BrowserSession) -> list[Document]:
    """The probe's facts for the focused tab's document and each of its frames (frames that fail are skipped)."""
    documents: list[Document] = []
    try:
        facts = await asyncio.wait_for(evaluate(browser, PROBE), PROBE_TIMEOUT)
    except (PageScriptError, TimeoutError) as exc:
        raise RuntimeError(f"The page could not be inspected for a CAPTCHA: {exc}") from exc
    if isinstance(facts, dict):
        documents.append((None, facts))
    try:
        frames = await frames_of(browser)
    except Exception:  # frames are a bonus; the main document was read
        frames = []
    for frame in frames:
        try:
            frame_facts = await asyncio.wait_for(evaluate_in_frame(browser, frame, PROBE), PROBE_TIMEOUT)
        except (PageScriptError, TimeoutError):
            continue
        if isinstance(frame_facts, dict):
            documents.append((frame, frame_facts))
    return documents


async def _run_in(browser: BrowserSession, frame: FrameRef | None, script: str) -> Any:
    return await evaluate(browser, script) if frame is None else await evaluate_in_frame(browser, frame, script)


async def _image_base64(browser: BrowserSession, frame: FrameRef | None, selector: str) -> str:
    grabbed = await _run_in(browser, frame, image_grab(selector))
    if not isinstance(grabbed, dict) or grabbed.get("error"):
        raise CaptchaRefused(f"The CAPTCHA image could not be read: {(grabbed or {}).get('error', 'no reply')}.")
    if grabbed.get("base64"):
        return str(grabbed["base64"])
    box = grabbed.get("box") or {}
    clip: Any = {**box, "scale": 1}
    session = await browser.get_or_create_cdp_session(focus=False)
    shot = await session.cdp_client.send.Page.captureScreenshot(
        params={"format": "png", "clip": clip, "captureBeyondViewport": True},
        session_id=session.session_id,
    )
    data = str(shot.get("data") or "")
    base64.b64decode(data, validate=True)
    return data


async def _inject(
    browser: BrowserSession, documents: list[Document], finding: Finding, solution: dict[str, Any]
) -> str:
    planned = injection(finding, solution)
    if planned is None:
        return "the solution had no usable answer field, so nothing was put into the page"
    script, what = planned
    targets = [frame for frame, facts in documents if any(f.kind is finding.kind for f in findings_of(facts))]
    filled, called = 0, []
    for frame in targets or [None]:
        try:
            done = await _run_in(browser, frame, script)
        except PageScriptError:
            continue
        if isinstance(done, dict):
            filled += int(done.get("filled") or 0)
            called += [str(name) for name in done.get("called") or []]
    if not filled and not called:
        return f"the {what} was received but no field for it was found on the page"
    text = f"{what} put into {filled} field(s)"
    return text + (f" and passed to {', '.join(called)}" if called else "")


async def run_solve_captcha(
    ctx: ToolContext, solver: CaptchaSolver, params: SolveCaptchaParams, browser: BrowserSession
) -> str:
    page_url = await browser.get_current_page_url()
    host = urlsplit(page_url).hostname or page_url
    documents = await _probe(browser)
    found = [finding for _, facts in documents for finding in findings_of(facts)]
    finding = choose(
        found,
        page_url=page_url,
        hint_type=params.hint_type,
        hint_site_key=params.hint_site_key,
        hint_image_selector=params.hint_image_selector,
        hint_answer_selector=params.hint_answer_selector,
    )

    async def refuse(reason: str, kind: str | None = None) -> CaptchaRefused:
        await ctx.event(
            EventCategory.CAPTCHA,
            "solve",
            f"CAPTCHA not attempted: {reason}",
            outcome="refused",
            type=kind,
            host=host,
            costUsd="0",
        )
        return CaptchaRefused(reason)

    if finding is None:
        raise await refuse("No CAPTCHA was detected on this page; if one is visible, pass hint_type.")
    if finding.kind in NEVER_ATTEMPTED:
        raise await refuse(
            f"{finding.label} is detected; it is never attempted, so report the block honestly.", finding.kind.value
        )
    missing = finding.missing()
    if missing is not None:
        raise await refuse(f"{finding.label} detected but {missing} was not found.", finding.kind.value)
    refused = solver.refusal(host)
    if refused is not None:
        raise await refuse(refused, finding.kind.value)
    image = ""
    if finding.kind is CaptchaKind.IMAGE:
        frame = next(
            (f for f, facts in documents if any(x.kind is CaptchaKind.IMAGE for x in findings_of(facts))), None
        )
        image = await _image_base64(browser, frame, finding.image_selector)

    details = {"type": finding.kind.value, "host": host, "siteKey": finding.site_key or None}
    await ctx.event(EventCategory.CAPTCHA, "solve", f"Solving {finding.label} on {host}", outcome="started", **details)
    async with CapSolverClient(solver.settings) as client:
        result = await client.solve(task_for(finding, image))
    await solver.record(host, result)
    cost = format_usd(result.cost)
    if not result.solved:
        await ctx.event(
            EventCategory.CAPTCHA,
            "solve",
            f"{finding.label} not solved (${cost}): {result.error}",
            outcome="failed",
            costUsd=cost,
            taskId=result.task_id,
            error=result.error,
            **details,
        )
        raise RuntimeError(f"The {finding.label} solve failed (cost ${cost}): {result.error}")
    assert result.solution is not None
    done = await _inject(browser, documents, finding, result.solution)
    await ctx.event(
        EventCategory.CAPTCHA,
        "solve",
        f"Solved {finding.label} (${cost}): {done}",
        outcome="solved",
        costUsd=cost,
        taskId=result.task_id,
        **details,
    )
    return (
        f"Solved the {finding.label} on {host} (cost ${cost}): {done}. Now submit the form or continue as a "
        "user would; check the page shows the check passed."
    )


def register_solve_captcha(tools: Tools[Any], ctx: ToolContext, solver: CaptchaSolver) -> None:
    kinds = ", ".join(LABELS[kind] for kind in CaptchaKind if kind not in NEVER_ATTEMPTED)

    async def solve_captcha(params: SolveCaptchaParams, browser_session: BrowserSession) -> ActionResult:
        reply = await run_solve_captcha(ctx, solver, params, browser_session)
        return ActionResult(extracted_content=reply, long_term_memory=reply[:300])

    solve_captcha.__annotations__["browser_session"] = BrowserSession  # browser-use compares the injected type
    tools.action(
        f"Solve the CAPTCHA blocking the current page with the paid solver ({kinds}). It detects the type and "
        "site key itself; hints are only overrides. hCaptcha and DataDome are never attempted.",
        param_model=SolveCaptchaParams,
    )(solve_captcha)
