"""The CapSolver API (createTask, then getTaskResult until ready) and the task each detected CAPTCHA needs.

Every reply is read for the cost CapSolver charged, failed tasks included, so the session is billed what the
solver really cost.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import httpx

from openbrowse.agent.captcha.detect import CaptchaKind, Finding
from openbrowse.shielding import run_shielded

DEFAULT_BASE_URL = "https://api.capsolver.com"
SOLVE_DEADLINE = 150.0
POLL_INTERVAL = 2.0
REQUEST_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class CapSolverSettings:
    api_key: str
    base_url: str = DEFAULT_BASE_URL
    max_cost_usd: Decimal = Decimal("0.03")
    """Per-dispatch ceiling on CAPTCHA spend; 0 removes it."""
    deadline: float = SOLVE_DEADLINE
    poll_interval: float = POLL_INTERVAL


@dataclass(frozen=True, slots=True)
class SolveResult:
    solution: dict[str, Any] | None
    cost: Decimal
    task_id: str = ""
    error: str = ""

    @property
    def solved(self) -> bool:
        return self.solution is not None


def task_for(finding: Finding, image_base64: str = "") -> dict[str, Any]:
    """The createTask ``task`` object for a finding whose parameters are complete."""
    url = finding.page_url
    kind = finding.kind
    if kind is CaptchaKind.RECAPTCHA_V2:
        task: dict[str, Any] = {
            "type": "ReCaptchaV2EnterpriseTaskProxyLess" if finding.enterprise else "ReCaptchaV2TaskProxyLess",
            "websiteURL": url,
            "websiteKey": finding.site_key,
        }
        if finding.invisible:
            task["isInvisible"] = True
        return task
    if kind is CaptchaKind.RECAPTCHA_V3:
        return {
            "type": "ReCaptchaV3EnterpriseTaskProxyLess" if finding.enterprise else "ReCaptchaV3TaskProxyLess",
            "websiteURL": url,
            "websiteKey": finding.site_key,
            "pageAction": finding.action or "verify",
        }
    if kind is CaptchaKind.TURNSTILE:
        metadata = {k: v for k, v in (("action", finding.action), ("cdata", finding.cdata)) if v}
        task = {"type": "AntiTurnstileTaskProxyLess", "websiteURL": url, "websiteKey": finding.site_key}
        return {**task, "metadata": metadata} if metadata else task
    if kind is CaptchaKind.GEETEST_V3:
        return {
            "type": "GeeTestTaskProxyLess",
            "websiteURL": url,
            "gt": finding.site_key,
            "challenge": finding.challenge,
        }
    if kind is CaptchaKind.GEETEST_V4:
        return {"type": "GeeTestTaskProxyLess", "websiteURL": url, "captchaId": finding.site_key}
    if kind is CaptchaKind.MTCAPTCHA:
        return {"type": "MtCaptchaTaskProxyLess", "websiteURL": url, "websiteKey": finding.site_key}
    if kind is CaptchaKind.AWS_WAF:
        aws = finding.aws or {}
        task = {
            "type": "AntiAwsWafTaskProxyLess",
            "websiteURL": url,
            "awsKey": aws.get("key", ""),
            "awsIv": aws.get("iv", ""),
            "awsContext": aws.get("context", ""),
        }
        return {**task, "awsChallengeJS": aws["challengeScript"]} if aws.get("challengeScript") else task
    if kind is CaptchaKind.IMAGE:
        return {"type": "ImageToTextTask", "websiteURL": url, "body": image_base64}
    raise ValueError(f"{finding.label} is never attempted")


def cost_of(reply: dict[str, Any]) -> Decimal:
    """The charge a CapSolver reply reports (``cost``, a number or a numeric string); 0 when absent."""
    value = reply.get("cost")
    if value is None or isinstance(value, bool):
        return Decimal(0)
    try:
        cost = Decimal(str(value))
    except InvalidOperation:
        return Decimal(0)
    return cost if cost.is_finite() and cost > 0 else Decimal(0)


def _error_of(reply: dict[str, Any]) -> str:
    if reply.get("errorId"):
        code = reply.get("errorCode") or "ERROR"
        description = reply.get("errorDescription") or ""
        return f"{code}: {description}".rstrip(": ")
    if reply.get("status") == "failed":
        return str(reply.get("errorDescription") or "the solver gave up on this CAPTCHA")
    return ""


class CapSolverClient:
    """One owner of an httpx client; ``aclose`` is shielded by the caller's ``async with``."""

    def __init__(self, settings: CapSolverSettings) -> None:
        self._settings = settings
        self._http = httpx.AsyncClient(base_url=settings.base_url.rstrip("/"), timeout=REQUEST_TIMEOUT)

    async def __aenter__(self) -> CapSolverClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await run_shielded(self._http.aclose())

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self._http.post(path, json={"clientKey": self._settings.api_key, **body})
        try:
            reply = response.json()
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            return {"errorId": 1, "errorCode": f"HTTP_{response.status_code}", "errorDescription": "not a JSON reply"}
        return reply

    async def solve(self, task: dict[str, Any]) -> SolveResult:
        """createTask, then poll getTaskResult until ready, failed or the deadline; never raises for API errors."""
        deadline = time.monotonic() + self._settings.deadline
        try:
            created = await self._post("/createTask", {"task": task})
        except httpx.HTTPError as exc:
            return SolveResult(None, Decimal(0), error=f"CapSolver could not be reached: {exc}")
        spent = cost_of(created)
        task_id = str(created.get("taskId") or "")
        error = _error_of(created)
        if error or not task_id:
            return SolveResult(None, spent, task_id, error or "CapSolver returned no task id")
        reply = created
        while reply.get("status") != "ready":
            if time.monotonic() >= deadline:
                return SolveResult(None, spent, task_id, f"no solution within {self._settings.deadline:.0f} s")
            await asyncio.sleep(self._settings.poll_interval)
            try:
                reply = await self._post("/getTaskResult", {"taskId": task_id})
            except httpx.HTTPError as exc:
                return SolveResult(None, spent, task_id, f"CapSolver could not be reached: {exc}")
            spent = max(spent, cost_of(reply))
            error = _error_of(reply)
            if error:
                return SolveResult(None, spent, task_id, error)
        solution = reply.get("solution")
        if not isinstance(solution, dict) or not solution:
            return SolveResult(None, spent, task_id, "CapSolver reported ready without a solution")
        return SolveResult(solution, spent, task_id)
