"""The raw-browser CDP filter (spec §24.6): file paths stay in the browser's folders, host paths never pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openbrowse.api.cdp_filter import CDP_SERVER_ERROR, DENIED, download_behavior_message, screen_client_message
from openbrowse.domain.browser_folders import BrowserFolders


@pytest.fixture
def folders(tmp_path: Path) -> BrowserFolders:
    return BrowserFolders(uploads=tmp_path / "slot" / "uploads", downloads=tmp_path / "slot" / "downloads").ensure()


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "server" / ".env"
    path.parent.mkdir()
    path.write_text("OPENAI_API_KEY=sk-secret\n")
    return path


def call(method: str, params: dict[str, Any], *, call_id: int = 7, session: str | None = None) -> str:
    message: dict[str, Any] = {"id": call_id, "method": method, "params": params}
    if session is not None:
        message["sessionId"] = session
    return json.dumps(message)


def refusal(verdict: Any) -> dict[str, Any]:
    assert verdict.forward is None, verdict
    assert verdict.reply is not None
    reply: dict[str, Any] = json.loads(verdict.reply)
    assert reply["error"]["code"] == CDP_SERVER_ERROR
    assert reply["error"]["message"].endswith(".") and "\n" not in reply["error"]["message"]
    return reply


def forwarded(verdict: Any) -> dict[str, Any]:
    assert verdict.reply is None, verdict.reply
    assert verdict.forward is not None
    text = verdict.forward if isinstance(verdict.forward, str) else verdict.forward.decode()
    parsed: dict[str, Any] = json.loads(text)
    return parsed


# -- file inputs ----------------------------------------------------------------------------------------------
def test_a_host_file_is_refused_with_the_calls_id_and_session(folders: BrowserFolders, secret: Path) -> None:
    message = call("DOM.setFileInputFiles", {"files": [str(secret)], "backendNodeId": 5}, call_id=41, session="S1")
    reply = refusal(screen_client_message(message, folders))
    assert reply["id"] == 41 and reply["sessionId"] == "S1"
    assert str(folders.uploads) in reply["error"]["message"]


def test_files_in_uploads_or_downloads_pass_unchanged(folders: BrowserFolders) -> None:
    (folders.uploads / "a.txt").write_text("a")
    (folders.downloads / "b.pdf").write_text("b")
    message = call(
        "DOM.setFileInputFiles", {"files": [str(folders.uploads / "a.txt"), str(folders.downloads / "b.pdf")]}
    )
    verdict = screen_client_message(message, folders)
    assert verdict.forward == message and verdict.reply is None


@pytest.mark.parametrize(
    "spelling",
    ["{uploads}/../../server/.env", "{uploads}/link-out", "relative/.env", "", "{uploads}/a\u0000b"],
)
def test_escapes_from_the_folders_are_refused(
    folders: BrowserFolders, secret: Path, spelling: str, tmp_path: Path
) -> None:
    (folders.uploads / "link-out").symlink_to(secret)
    path = spelling.format(uploads=folders.uploads)
    refusal(screen_client_message(call("DOM.setFileInputFiles", {"files": [path]}), folders))


def test_one_bad_file_among_good_ones_refuses_the_call(folders: BrowserFolders, secret: Path) -> None:
    (folders.uploads / "a.txt").write_text("a")
    message = call("DOM.setFileInputFiles", {"files": [str(folders.uploads / "a.txt"), str(secret)]})
    refusal(screen_client_message(message, folders))


def test_a_files_list_of_the_wrong_shape_is_refused(folders: BrowserFolders) -> None:
    for files in (None, "x", [1], {"a": 1}):
        refusal(screen_client_message(call("DOM.setFileInputFiles", {"files": files}), folders))


def test_a_drag_carrying_host_files_is_refused_and_a_plain_drag_passes(folders: BrowserFolders, secret: Path) -> None:
    data = {"items": [], "files": [str(secret)], "dragOperationsMask": 1}
    refusal(
        screen_client_message(call("Input.dispatchDragEvent", {"type": "drop", "x": 1, "y": 1, "data": data}), folders)
    )
    plain = call(
        "Input.dispatchDragEvent", {"type": "drop", "x": 1, "y": 1, "data": {"items": [], "dragOperationsMask": 1}}
    )
    assert screen_client_message(plain, folders).forward == plain


# -- spelling tricks ------------------------------------------------------------------------------------------
def test_a_method_name_spelled_with_escapes_is_still_screened(folders: BrowserFolders, secret: Path) -> None:
    message = call("DOM.setFileInputFiles", {"files": [str(secret)]}).replace("setFile", "set\\u0046ile")
    assert "setFileInputFiles" not in message
    refusal(screen_client_message(message, folders))


def test_repeated_keys_are_refused(folders: BrowserFolders, secret: Path) -> None:
    message = (
        '{"id": 3, "method": "Runtime.evaluate", "method": "DOM.setFileInputFiles", '
        f'"params": {{"files": ["{secret}"]}}}}'
    )
    assert refusal(screen_client_message(message, folders))["id"] == 3


def test_binary_frames_are_screened_like_text(folders: BrowserFolders, secret: Path) -> None:
    message = call("DOM.setFileInputFiles", {"files": [str(secret)]}).encode()
    refusal(screen_client_message(message, folders))
    assert screen_client_message(b"\xd8\x5a\x00\x01", folders).forward is None  # not UTF-8 (CBOR): dropped


def test_the_old_nested_mode_is_screened_inside(folders: BrowserFolders, secret: Path) -> None:
    inner = call("DOM.setFileInputFiles", {"files": [str(secret)]}, call_id=1)
    outer = call("Target.sendMessageToTarget", {"sessionId": "S", "message": inner}, call_id=9)
    assert refusal(screen_client_message(outer, folders))["id"] == 9
    inner_download = call("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": "/tmp/x"}, call_id=2)
    rewritten = forwarded(
        screen_client_message(call("Target.sendMessageToTarget", {"message": inner_download}), folders)
    )
    assert json.loads(rewritten["params"]["message"])["params"]["downloadPath"] == str(folders.downloads)


# -- downloads ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["Browser.setDownloadBehavior", "Page.setDownloadBehavior"])
def test_downloads_anywhere_else_land_in_downloads(folders: BrowserFolders, method: str, tmp_path: Path) -> None:
    for params in (
        {"behavior": "allow", "downloadPath": "/tmp/elsewhere"},
        {"behavior": "allowAndName", "downloadPath": str(folders.downloads / ".." / "..")},
        {"behavior": "allow"},
        {"behavior": "default"},
    ):
        sent = forwarded(screen_client_message(call(method, {**params, "eventsEnabled": True}), folders))
        assert sent["id"] == 7 and sent["method"] == method
        assert sent["params"]["downloadPath"] == str(folders.downloads)
        assert sent["params"]["behavior"] in {"allow", "allowAndName"} and sent["params"]["eventsEnabled"] is True


def test_a_download_path_inside_downloads_and_deny_pass_unchanged(folders: BrowserFolders) -> None:
    inside = call("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(folders.downloads / "sub")})
    assert screen_client_message(inside, folders).forward == inside
    deny = call("Browser.setDownloadBehavior", {"behavior": "deny"})
    assert screen_client_message(deny, folders).forward == deny


def test_a_download_path_through_a_link_out_is_replaced(folders: BrowserFolders, tmp_path: Path) -> None:
    (folders.downloads / "out").symlink_to(tmp_path)
    message = call("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(folders.downloads / "out")})
    assert forwarded(screen_client_message(message, folders))["params"]["downloadPath"] == str(folders.downloads)


def test_a_download_path_that_is_not_a_string_is_refused(folders: BrowserFolders) -> None:
    refusal(
        screen_client_message(call("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": 5}), folders)
    )


def test_the_bridge_greeting_sends_downloads_to_the_folder(folders: BrowserFolders) -> None:
    greeting = json.loads(download_behavior_message(99, folders))
    assert greeting["id"] == 99 and greeting["method"] == "Browser.setDownloadBehavior"
    assert greeting["params"]["downloadPath"] == str(folders.downloads)


# -- methods that reach the host ------------------------------------------------------------------------------
@pytest.mark.parametrize("method", sorted(DENIED))
def test_denied_methods_are_refused(folders: BrowserFolders, method: str) -> None:
    reply = refusal(screen_client_message(call(method, {"path": "/etc", "targetId": "T"}), folders))
    assert method in reply["error"]["message"]


@pytest.mark.parametrize("method", ["Page.navigate", "Target.createTarget", "Network.loadNetworkResource"])
def test_local_file_urls_are_refused(folders: BrowserFolders, method: str) -> None:
    for url in ("file:///work/main/.env", " FILE:///etc/passwd", "fi\tle:///etc/passwd", "view-source:file:///etc"):
        refusal(screen_client_message(call(method, {"url": url}), folders))
    web = call(method, {"url": "https://example.com/file:///"})
    assert screen_client_message(web, folders).forward == web


# -- everything else ------------------------------------------------------------------------------------------
def test_other_calls_pass_as_they_came_without_being_parsed(folders: BrowserFolders) -> None:
    big = call("Runtime.evaluate", {"expression": "'" + "y" * (4 << 20) + "'.length"})
    assert screen_client_message(big, folders).forward is big
    not_json = "{nope"
    assert screen_client_message(not_json, folders).forward is not_json


def test_an_unparseable_watched_call_is_answered_when_its_id_is_readable(folders: BrowserFolders) -> None:
    reply = refusal(screen_client_message('{"id": 12, "method": "DOM.setFileInputFiles", "params": {', folders))
    assert reply["id"] == 12
    assert screen_client_message('{"method": "DOM.setFileInputFiles"', folders).forward is None
