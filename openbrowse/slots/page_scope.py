"""What a script may say over CDP: its page, never the browser (spec §11.3, §24.1). Pure decisions, no I/O.

A script's CDP commands reach the slot's Chromium only through :class:`PageScope`, an allowlist:

- browser-level (no ``sessionId``): ``Target.attachToTarget`` to the agent's focused page (flattened) and
  ``Target.getTargetInfo`` / ``Target.detachFromTarget`` for what the script holds; nothing else (no
  ``Target.getTargets``, ``createTarget``, ``Browser.*``, ``Storage.*``, ``SystemInfo``, ``Tracing``);
- on a session the script holds (the focused page, or a frame Chromium auto-attached under it): ``Runtime.*``,
  ``DOM.*`` and ``Input.*`` except what hands the page a local file (``DOM.setFileInputFiles``,
  ``DOM.getFileInfo``, drag events, which carry file paths), a fixed list of ``Page.*`` (``Page.navigate`` only
  to http(s) and ``about:blank``), and ``Target.setAutoAttach``, rewritten to attach the page's own frames only.

Everything else is refused with a CDP error naming the rule; no cookie, storage, network or browser method is on
the list. Events reach the script only for sessions it holds. A session belongs to the page it was attached
under; when the agent's focus moves, sessions of the old page are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Forward", "PageScope", "Refuse"]

SESSION_DOMAINS = frozenset({"Runtime", "DOM", "Input"})
REFUSED_IN_DOMAINS = frozenset(
    {"DOM.setFileInputFiles", "DOM.getFileInfo", "Input.dispatchDragEvent", "Input.setInterceptDrags"}
)
PAGE_METHODS = frozenset(
    {
        "Page.enable",
        "Page.disable",
        "Page.navigate",
        "Page.reload",
        "Page.stopLoading",
        "Page.getFrameTree",
        "Page.getLayoutMetrics",
        "Page.getNavigationHistory",
        "Page.createIsolatedWorld",
        "Page.captureScreenshot",
        "Page.printToPDF",
        "Page.bringToFront",
        "Page.handleJavaScriptDialog",
        "Page.addScriptToEvaluateOnNewDocument",
        "Page.removeScriptToEvaluateOnNewDocument",
        "Page.setLifecycleEventsEnabled",
        "Page.setBypassCSP",
    }
)
NAVIGABLE = ("http://", "https://")
FRAMES_ONLY = [{"type": "iframe", "exclude": False}, {"exclude": True}]
"""``Target.setAutoAttach``'s filter: the page's frames, never its workers or anything else."""
REFUSED = -32601


@dataclass(frozen=True, slots=True)
class Forward:
    """Send ``command`` to Chromium: rebuilt from the parsed fields only, possibly with parameters rewritten."""

    command: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Refuse:
    reason: str

    def reply(self, command: dict[str, Any]) -> dict[str, Any]:
        message = f"Refused by OpenBrowse: {self.reason} (scripts reach their page, not the browser)"
        reply: dict[str, Any] = {"id": command.get("id"), "error": {"code": REFUSED, "message": message}}
        if isinstance(command.get("sessionId"), str):
            reply["sessionId"] = command["sessionId"]
        return reply


class PageScope:
    """The sessions a script holds and the focused page they must belong to; see the module docstring."""

    def __init__(self) -> None:
        self.focused: str | None = None
        self._roots: dict[str, str] = {}
        """Session id → the page target it belongs to (the page's own session, or a frame's under it)."""
        self._targets: dict[str, str] = {}
        """Frame target id → the page target it belongs to."""
        self._pending: dict[int, tuple[str, str | None]] = {}
        """Command id → (method, target) of the commands whose replies matter."""

    def focus(self, target_id: str | None) -> None:
        self.focused = target_id

    def _current(self, session: str) -> bool:
        root = self._roots.get(session)
        return root is not None and root == self.focused

    def _holds_target(self, target: object) -> bool:
        return isinstance(target, str) and (
            target == self.focused or (target in self._targets and self._targets[target] == self.focused)
        )

    # -- commands from the script --------------------------------------------------------------------------
    def check(self, command: object) -> Forward | Refuse:
        if not isinstance(command, dict) or type(command.get("id")) is not int or command["id"] < 0:
            return Refuse("a command needs an integer id")
        method, params, session = command.get("method"), command.get("params", {}), command.get("sessionId")
        if not isinstance(method, str) or not isinstance(params, dict):
            return Refuse("a command needs a method name and an object of parameters")
        if session is None:
            return self._browser_level(command, method, params)
        if not isinstance(session, str) or not self._current(session):
            return Refuse("that session is not the focused page's")
        # only the parsed fields go on: Chromium's parser may read a duplicated key differently from ours
        return self._page_level({"id": command["id"], "method": method, "params": params, "sessionId": session})

    def _browser_level(self, command: dict[str, Any], method: str, params: dict[str, Any]) -> Forward | Refuse:
        target = params.get("targetId")
        if method == "Target.attachToTarget":
            if self.focused is None or target != self.focused:
                return Refuse("only the agent's focused page can be attached")
            if params.get("flatten") is not True:
                return Refuse("attach with flatten: true")
            self._pending[command["id"]] = (method, target)
            return Forward({"id": command["id"], "method": method, "params": {"targetId": target, "flatten": True}})
        if method == "Target.getTargetInfo":
            if not self._holds_target(target):
                return Refuse("only the focused page and its frames can be looked up")
            return Forward({"id": command["id"], "method": method, "params": {"targetId": target}})
        if method == "Target.detachFromTarget":
            session = params.get("sessionId")
            if not isinstance(session, str) or session not in self._roots:
                return Refuse("only the script's own sessions can be detached")
            return Forward({"id": command["id"], "method": method, "params": {"sessionId": session}})
        return Refuse(f"{method} is a browser-level method")

    def _page_level(self, command: dict[str, Any]) -> Forward | Refuse:
        method, params = command["method"], command["params"]
        domain = method.partition(".")[0]
        if method == "Target.setAutoAttach":
            rewritten = {
                "autoAttach": params.get("autoAttach") is True,
                "waitForDebuggerOnStart": False,
                "flatten": True,
                "filter": FRAMES_ONLY,
            }
            return Forward({**command, "params": rewritten})
        if method == "Page.navigate":
            url = params.get("url")
            if not isinstance(url, str) or not (url.startswith(NAVIGABLE) or url == "about:blank"):
                return Refuse("Page.navigate takes an http(s) URL")
            return Forward(command)
        if method in PAGE_METHODS or (domain in SESSION_DOMAINS and method not in REFUSED_IN_DOMAINS):
            return Forward(command)
        return Refuse(f"{method} is not a page method scripts may use")

    # -- messages from Chromium ----------------------------------------------------------------------------
    def passes(self, message: dict[str, Any]) -> bool:
        """Whether a message from Chromium goes to the script; learns the sessions it creates on the way."""
        call_id = message.get("id")
        if call_id is not None:
            pending = self._pending.pop(call_id, None) if isinstance(call_id, int) else None
            if pending is not None and pending[1] is not None:
                session = (message.get("result") or {}).get("sessionId")
                if isinstance(session, str):
                    self._roots[session] = pending[1]
            return True  # every command was the script's own (the filter sends none of its own)
        session = message.get("sessionId")
        method = message.get("method")
        params = message.get("params") or {}
        if method == "Target.detachedFromTarget":
            detached = params.get("sessionId")
            root = self._roots.pop(detached, None) if isinstance(detached, str) else None
            self._targets = {t: r for t, r in self._targets.items() if t != params.get("targetId")}
            return root is not None
        if not isinstance(session, str) or session not in self._roots:
            return False
        if method == "Target.attachedToTarget":
            child = params.get("sessionId")
            info = params.get("targetInfo") or {}
            if not isinstance(child, str) or info.get("type") != "iframe":
                return False
            root = self._roots[session]
            self._roots[child] = root
            target = info.get("targetId")
            if isinstance(target, str):
                self._targets[target] = root
        return True
