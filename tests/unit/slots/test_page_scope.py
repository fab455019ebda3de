"""The script's CDP allowlist (``slots/page_scope.py``): the focused page and its frames, nothing of the browser."""

from __future__ import annotations

from typing import Any

import pytest

from openbrowse.slots.page_scope import FRAMES_ONLY, Forward, PageScope, Refuse

PAGE = "PAGE-1"


def attached(scope: PageScope, session: str = "S-page") -> str:
    decision = scope.check({"id": 1, "method": "Target.attachToTarget", "params": {"targetId": PAGE, "flatten": True}})
    assert isinstance(decision, Forward)
    assert scope.passes({"id": 1, "result": {"sessionId": session}})
    return session


@pytest.fixture
def scope() -> PageScope:
    focused = PageScope()
    focused.focus(PAGE)
    return focused


def refused(decision: Forward | Refuse) -> str:
    assert isinstance(decision, Refuse), decision
    return decision.reason


@pytest.mark.parametrize(
    "method",
    [
        "Storage.getCookies",
        "Storage.setCookies",
        "Storage.clearDataForOrigin",
        "Network.getAllCookies",
        "Network.clearBrowserCookies",
        "Target.getTargets",
        "Target.createTarget",
        "Target.setDiscoverTargets",
        "Target.setAutoAttach",
        "Browser.getVersion",
        "Browser.setDownloadBehavior",
        "SystemInfo.getProcessInfo",
        "Tracing.start",
    ],
)
def test_browser_level_methods_are_refused(scope: PageScope, method: str) -> None:
    assert "browser-level" in refused(scope.check({"id": 5, "method": method, "params": {}}))


@pytest.mark.parametrize(
    "method",
    [
        "Storage.getCookies",
        "Network.getCookies",
        "Network.getAllCookies",
        "Network.setCookie",
        "Network.setCookies",
        "Network.deleteCookies",
        "Network.enable",
        "Page.getCookies",
        "Page.setDownloadBehavior",
        "DOM.setFileInputFiles",
        "Input.dispatchDragEvent",
        "Fetch.enable",
        "IO.read",
        "Emulation.setGeolocationOverride",
        "Target.createTarget",
    ],
)
def test_on_the_page_cookie_storage_file_and_unlisted_methods_are_refused(scope: PageScope, method: str) -> None:
    session = attached(scope)
    assert refused(scope.check({"id": 7, "method": method, "params": {}, "sessionId": session}))


@pytest.mark.parametrize(
    "method", ["Runtime.evaluate", "DOM.getDocument", "Input.dispatchKeyEvent", "Page.captureScreenshot"]
)
def test_page_methods_go_through_rebuilt_from_their_parsed_fields(scope: PageScope, method: str) -> None:
    session = attached(scope)
    command: dict[str, Any] = {"id": 9, "method": method, "params": {"x": 1}, "sessionId": session, "extra": True}
    decision = scope.check(command)
    assert isinstance(decision, Forward)
    assert decision.command == {"id": 9, "method": method, "params": {"x": 1}, "sessionId": session}


def test_only_the_focused_page_can_be_attached_and_an_old_pages_session_is_refused(scope: PageScope) -> None:
    other = {"id": 2, "method": "Target.attachToTarget", "params": {"targetId": "OTHER-TAB", "flatten": True}}
    assert "focused page" in refused(scope.check(other))
    session = attached(scope)
    scope.focus("PAGE-2")
    assert "not the focused page" in refused(
        scope.check({"id": 3, "method": "Runtime.evaluate", "params": {}, "sessionId": session})
    )
    unflattened = {"id": 4, "method": "Target.attachToTarget", "params": {"targetId": "PAGE-2"}}
    assert "flatten" in refused(scope.check(unflattened))


def test_auto_attach_is_rewritten_to_the_pages_frames_and_they_become_the_scripts(scope: PageScope) -> None:
    session = attached(scope)
    asked = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": False, "filter": [{}]}
    decision = scope.check({"id": 4, "method": "Target.setAutoAttach", "params": asked, "sessionId": session})
    assert isinstance(decision, Forward)
    assert decision.command["params"] == {
        "autoAttach": True,
        "waitForDebuggerOnStart": False,
        "flatten": True,
        "filter": FRAMES_ONLY,
    }
    frame = {"sessionId": "S-frame", "targetInfo": {"targetId": "FRAME-1", "type": "iframe"}}
    assert scope.passes({"method": "Target.attachedToTarget", "params": frame, "sessionId": session})
    evaluate = {"id": 6, "method": "Runtime.evaluate", "params": {}, "sessionId": "S-frame"}
    assert isinstance(scope.check(evaluate), Forward)
    info = {"id": 8, "method": "Target.getTargetInfo", "params": {"targetId": "FRAME-1"}}
    assert isinstance(scope.check(info), Forward)
    worker = {"sessionId": "S-worker", "targetInfo": {"targetId": "W", "type": "service_worker"}}
    assert not scope.passes({"method": "Target.attachedToTarget", "params": worker, "sessionId": session})


def test_events_of_sessions_the_script_does_not_hold_never_reach_it(scope: PageScope) -> None:
    session = attached(scope)
    assert scope.passes({"method": "Runtime.consoleAPICalled", "params": {}, "sessionId": session})
    assert not scope.passes({"method": "Runtime.consoleAPICalled", "params": {}, "sessionId": "S-other-tab"})
    assert not scope.passes({"method": "Target.targetCreated", "params": {"targetInfo": {"url": "https://x"}}})


@pytest.mark.parametrize("url", ["file:///etc/passwd", "chrome://settings/passwords", "javascript:alert(1)", 7])
def test_navigation_takes_http_urls_only(scope: PageScope, url: object) -> None:
    session = attached(scope)
    command = {"id": 3, "method": "Page.navigate", "params": {"url": url}, "sessionId": session}
    assert "http" in refused(scope.check(command))
    command["params"] = {"url": "https://example.com/"}
    assert isinstance(scope.check(command), Forward)


def test_a_refusal_is_a_cdp_error_reply_to_the_same_id_and_session(scope: PageScope) -> None:
    command = {"id": 11, "method": "Storage.getCookies", "params": {}, "sessionId": "S-x"}
    decision = scope.check(command)
    assert isinstance(decision, Refuse)
    reply = decision.reply(command)
    assert reply["id"] == 11 and reply["sessionId"] == "S-x"
    assert reply["error"]["message"].startswith("Refused by OpenBrowse")
    assert isinstance(scope.check("not an object"), Refuse)
    assert isinstance(scope.check({"id": "1", "method": "Runtime.evaluate"}), Refuse)
