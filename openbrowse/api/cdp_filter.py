"""What a raw browser's CDP client may ask of Chromium about files (spec §24.6): a browser, not the host.

:func:`screen_client_message` looks at one client→browser message and returns a :class:`Verdict`: forward it
(as it came, or rewritten), or answer the client with a CDP error and forward nothing.

* ``DOM.setFileInputFiles`` and ``Input.dispatchDragEvent`` (``data.files``): every path must resolve, links
  followed, inside the browser's ``uploads/`` or ``downloads/``.
* ``Browser.setDownloadBehavior`` / ``Page.setDownloadBehavior``: downloads always land in ``downloads/``. A
  ``downloadPath`` inside it is kept; any other one, or none, becomes ``downloads/`` (Playwright's
  ``connect_over_cdp`` sends its own temp dir on the client's machine and gives up if that call fails).
  ``default`` (Chromium's own download folder) becomes ``allow`` into ``downloads/``, and so does
  ``allowAndName`` (Playwright's choice): files keep their own names, which the downloads listing shows (§22.2).
* ``Page.navigate``, ``Target.createTarget`` and ``Network.loadNetworkResource`` refuse ``file:`` and
  ``filesystem:`` URLs (the last one reads local files outside any page's reach).
* :data:`DENIED` methods are refused outright: they take a host path, open something on the host, or hand a
  page a CDP channel that does not pass through this filter.
* ``Target.sendMessageToTarget`` (the old non-flat mode) is screened by the same rules, inside.

Messages reach tens of MB (``Runtime.evaluate`` of a bundle), so one is parsed only when its raw text could
name a watched method: it spells one out, or it holds a ``\\u``/``\\x`` escape that could spell one. A parsed
message with a repeated key is refused: Chromium and Python need not agree on which copy wins.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openbrowse.domain.browser_folders import BrowserFolders, real_path_inside

__all__ = [
    "CDP_SERVER_ERROR",
    "DENIED",
    "DOWNLOAD_METHODS",
    "FILE_METHODS",
    "URL_METHODS",
    "Verdict",
    "download_behavior_message",
    "screen_client_message",
]

CDP_SERVER_ERROR = -32000

FILE_METHODS = frozenset({"DOM.setFileInputFiles", "Input.dispatchDragEvent"})
DOWNLOAD_METHODS = frozenset({"Browser.setDownloadBehavior", "Page.setDownloadBehavior"})
URL_METHODS = frozenset({"Page.navigate", "Target.createTarget", "Network.loadNetworkResource"})
NESTED_METHOD = "Target.sendMessageToTarget"
DENIED: dict[str, str] = {
    "Extensions.loadUnpacked": "loads an extension from a folder on the server",
    "PWA.launchFilesInApp": "opens files on the server in an app",
    "PWA.install": "installs an app from a location on the server",
    "Target.exposeDevToolsProtocol": "gives a page a DevTools channel this server does not see",
    "Tethering.bind": "opens a listening port on the server",
}
_WATCHED = FILE_METHODS | DOWNLOAD_METHODS | URL_METHODS | {NESTED_METHOD} | DENIED.keys()
_ALLOWING = frozenset({"allow", "allowAndName"})
_MAX_NESTING = 4
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,15})\b')
_LOCAL_SCHEMES = ("file:", "filesystem:")
_C0_AND_SPACE = "".join(chr(code) for code in range(0x21))  # what URL parsing strips in front


@dataclass(frozen=True, slots=True)
class Verdict:
    """``forward``: what to send to the browser (None: nothing). ``reply``: what to send back to the client."""

    forward: bytes | str | None = None
    reply: str | None = None


class _Refused(Exception):
    """A message that must not reach the browser; the text is the one sentence the client gets."""


class _Unreadable(Exception):
    """A message that names a watched method but does not parse as one JSON object with unique keys."""


def screen_client_message(
    message: bytes | str, folders: BrowserFolders, resolve: Callable[[str], str | None] | None = None
) -> Verdict:
    """Judge one client→browser CDP message. ``resolve`` (tests) maps a path to its real path inside the
    browser's file-input folders, or None; by default the folders' real paths are used."""
    text = _text_of(message)
    if text is None:
        return Verdict()  # not UTF-8: Chromium would not read it either; there is no id to answer
    if not _may_name_a_watched_method(text):
        return Verdict(forward=message)
    checker = _Checker(folders, resolve)
    try:
        rewritten = checker.screen(text, depth=0)
    except _Refused as refusal:
        return Verdict(reply=_error_reply(text, str(refusal)))
    except _Unreadable:
        return Verdict(reply=_error_reply(text, "The message is not one JSON object with unique keys."))
    return Verdict(forward=message if rewritten is None else rewritten)


def download_behavior_message(call_id: int, folders: BrowserFolders) -> str:
    """The call the bridge makes when a client connects, so downloads land in ``downloads/`` from the start."""
    params = {"behavior": "allow", "downloadPath": str(folders.downloads), "eventsEnabled": False}
    return json.dumps({"id": call_id, "method": "Browser.setDownloadBehavior", "params": params})


# -- parsing ------------------------------------------------------------------------------------------------
def _text_of(message: bytes | str) -> str | None:
    if isinstance(message, str):
        return message
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _may_name_a_watched_method(text: str) -> bool:
    if "\\u" in text or "\\x" in text:
        return True
    return any(name in text for name in _WATCHED)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _Unreadable
    return result


def _parse(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as exc:
        raise _Unreadable from exc
    if not isinstance(value, dict):
        raise _Unreadable
    return value


def _error_reply(text: str, sentence: str) -> str | None:
    """The CDP error answer to the call in ``text``, or None when it carries no readable id."""
    reply: dict[str, Any] = {}
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("id"), int):
        reply["id"] = parsed["id"]
        if isinstance(parsed.get("sessionId"), str):
            reply["sessionId"] = parsed["sessionId"]
    else:
        found = _ID.search(text.encode("utf-8", "replace")[:4096])
        if found is None:
            return None
        reply["id"] = int(found.group(1))
    reply["error"] = {"code": CDP_SERVER_ERROR, "message": sentence}
    return json.dumps(reply)


# -- the rules ----------------------------------------------------------------------------------------------
class _Checker:
    def __init__(self, folders: BrowserFolders, resolve: Callable[[str], str | None] | None) -> None:
        self._folders = folders
        self._resolve = resolve or (lambda path: real_path_inside(path, folders.file_input_roots))

    def screen(self, text: str, depth: int) -> str | None:
        """None: forward ``text`` unchanged; a string: forward that instead. Raises :class:`_Refused`."""
        call = _parse(text)
        method = call.get("method")
        if not isinstance(method, str):
            return None  # Chromium answers a call without a method itself
        params = call.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise _Refused(f"The params of {method} must be an object.")
        changed = self._apply(method, params, depth)
        if changed is None:
            return None
        call["params"] = changed
        return json.dumps(call, separators=(",", ":"))

    def _apply(self, method: str, params: dict[str, Any], depth: int) -> dict[str, Any] | None:
        if method in DENIED:
            raise _Refused(f"{method} is not available through this server: it {DENIED[method]}.")
        if method == "DOM.setFileInputFiles":
            self._check_files(method, params.get("files"))
        elif method == "Input.dispatchDragEvent":
            data = params.get("data")
            if isinstance(data, dict) and "files" in data:
                self._check_files(method, data["files"])
        elif method in DOWNLOAD_METHODS:
            return self._confine_downloads(method, params)
        elif method in URL_METHODS:
            self._check_url(method, params.get("url"))
        elif method == NESTED_METHOD:
            return self._screen_nested(params, depth)
        return None

    def _check_files(self, method: str, files: object) -> None:
        if not isinstance(files, list) or not all(isinstance(path, str) for path in files):
            raise _Refused(f"{method} takes a list of file paths.")
        for path in files:
            if self._resolve(path) is None:
                raise _Refused(
                    f"{method} may only use files in this browser's uploads or downloads folder "
                    f"({self._folders.uploads} or {self._folders.downloads}); {path!r} is not there."
                )

    def _confine_downloads(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        behavior = params.get("behavior")
        path = params.get("downloadPath")
        if path is not None and not isinstance(path, str):
            raise _Refused(f"The downloadPath of {method} must be a string.")
        if behavior in {"default", "allowAndName"}:
            behavior = "allow"
        if behavior not in _ALLOWING:
            return None  # deny, or a value Chromium refuses itself
        downloads = Path(self._folders.downloads)
        if path is not None and real_path_inside(path, (downloads,)) is not None:
            return None if behavior == params.get("behavior") else {**params, "behavior": behavior}
        return {**params, "behavior": behavior, "downloadPath": str(downloads)}

    def _check_url(self, method: str, url: object) -> None:
        if not isinstance(url, str):
            return
        cleaned = re.sub(r"[\t\n\r]", "", url).lstrip(_C0_AND_SPACE)
        lowered = cleaned.lower()
        while lowered.startswith("view-source:"):
            lowered = lowered.removeprefix("view-source:").lstrip()
        if lowered.startswith(_LOCAL_SCHEMES):
            raise _Refused(f"{method} cannot open local files: the browser's files are not the server's.")

    def _screen_nested(self, params: dict[str, Any], depth: int) -> dict[str, Any] | None:
        inner = params.get("message")
        if not isinstance(inner, str):
            return None
        if depth >= _MAX_NESTING:
            raise _Refused("Target.sendMessageToTarget is nested too deeply.")
        rewritten = self.screen(inner, depth + 1) if _may_name_a_watched_method(inner) else None
        return None if rewritten is None else {**params, "message": rewritten}
