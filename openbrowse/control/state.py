"""Browser state through the control API: cookies, web storage and permissions (spec §20.2).

Cookies belong to the browser's default context; web storage to the origin of the tab's page, read and written in
the page itself. The emulation overrides (``/set/*``) live in :mod:`openbrowse.control.emulation`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError

from openbrowse.control.call import ControlCall, route
from openbrowse.control.emulation import origin_of
from openbrowse.control.errors import act_invalid, operation_failed

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine

__all__ = ["clear_cookies", "cookies", "grant_permissions", "set_cookie", "set_cookies"]


def _cookie(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise act_invalid("cookie must be an object")
    name, value = raw.get("name"), raw.get("value")
    if not isinstance(name, str) or not name or not isinstance(value, str):
        raise act_invalid("cookie name and value are required")
    cookie: dict[str, Any] = {"name": name, "value": value}
    for key in ("url", "domain", "path", "sameSite"):
        if isinstance(raw.get(key), str) and raw[key]:
            cookie[key] = raw[key]
    if "url" not in cookie:
        if "domain" not in cookie:
            raise act_invalid("cookie requires url, or domain+path")
        cookie.setdefault("path", "/")
    if cookie.get("sameSite") not in (None, "Lax", "None", "Strict"):
        raise act_invalid("cookie.sameSite must be Lax|None|Strict")
    for key in ("httpOnly", "secure"):
        if isinstance(raw.get(key), bool):
            cookie[key] = raw[key]
    expires = raw.get("expires")
    if isinstance(expires, int | float) and not isinstance(expires, bool):
        cookie["expires"] = float(expires)
    return cookie


@route("GET", "/cookies", mutating=False)
async def cookies(call: ControlCall) -> dict[str, Any]:
    """Cookies of the browser."""
    page = await call.engine.page(call.target_id)
    found = await call.engine.context.cookies()
    return {"ok": True, "targetId": await call.engine.target_id_of(page), "cookies": found}


async def _add_cookies(engine: ControlEngine, items: list[dict[str, Any]]) -> int:
    try:
        await engine.context.add_cookies(items)  # type: ignore[arg-type]
        return len(items)
    except PlaywrightError:
        added = 0  # one bad cookie must not drop the others
        for item in items:
            with contextlib.suppress(PlaywrightError):
                await engine.context.add_cookies([item])  # type: ignore[list-item]
                added += 1
        return added


@route("POST", "/cookies/set", mutating=True)
async def set_cookie(call: ControlCall) -> dict[str, Any]:
    """Add or replace one cookie."""
    cookie = _cookie(call.arg("cookie"))
    page = await call.engine.page(call.target_id)
    if await _add_cookies(call.engine, [cookie]) == 0:
        raise operation_failed(f"The browser refused cookie {cookie['name']!r}.")
    return {"ok": True, "targetId": await call.engine.target_id_of(page), "added": 1}


@route("POST", "/cookies/set-many", mutating=True)
async def set_cookies(call: ControlCall) -> dict[str, Any]:
    """Add or replace many cookies; ``added`` counts the ones the browser took."""
    raw = call.arg("cookies")
    if not isinstance(raw, list) or not raw:
        raise act_invalid("cookies must be a non-empty array")
    items = [_cookie(item) for item in raw]
    page = await call.engine.page(call.target_id)
    return {
        "ok": True,
        "targetId": await call.engine.target_id_of(page),
        "added": await _add_cookies(call.engine, items),
    }


@route("POST", "/cookies/clear", mutating=True)
async def clear_cookies(call: ControlCall) -> dict[str, Any]:
    """Remove cookies: all of them, or those matching ``name`` and/or ``domain``."""
    page = await call.engine.page(call.target_id)
    await call.engine.context.clear_cookies(name=call.text("name"), domain=call.text("domain"))
    return {"ok": True, "targetId": await call.engine.target_id_of(page)}


_STORAGE_JS = """([kind, op, key, value]) => {
  const store = kind === "session" ? window.sessionStorage : window.localStorage;
  if (op === "set") store.setItem(key, value);
  if (op === "clear") { if (key === null) store.clear(); else store.removeItem(key); }
  const items = {};
  if (op === "get" && key !== null) { const v = store.getItem(key); if (v !== null) items[key] = v; }
  else for (let i = 0; i < store.length; i++) { const k = store.key(i); if (k !== null) items[k] = store.getItem(k); }
  return { origin: location.origin, items };
}"""


async def _storage(call: ControlCall, op: str, key: str | None = None, value: str | None = None) -> dict[str, Any]:
    kind = call.path.get("kind", "")
    if kind not in {"local", "session"}:
        raise act_invalid("kind must be local|session")
    page = await call.engine.page(call.target_id)
    try:
        result: dict[str, Any] = await page.evaluate(_STORAGE_JS, [kind, op, key, value])
    except PlaywrightError as exc:
        raise operation_failed(
            f"This tab's page ({page.url}) has no {kind}Storage the API can use; open a web page first."
        ) from exc
    items = result["items"]
    return {
        "ok": True,
        "targetId": await call.engine.target_id_of(page),
        "origin": result["origin"],
        "items": items,
        "values": items,
    }


@route("GET", "/storage/{kind}", mutating=False)
async def storage_get(call: ControlCall) -> dict[str, Any]:
    """localStorage or sessionStorage items of the tab's origin (``key`` for one)."""
    return await _storage(call, "get", call.text("key"))


@route("POST", "/storage/{kind}/set", mutating=True)
async def storage_set(call: ControlCall) -> dict[str, Any]:
    """Set one storage item."""
    key = call.text("key", required=True)
    value = call.arg("value")
    if value is not None and not isinstance(value, str):
        raise act_invalid("value must be a string")
    return await _storage(call, "set", key, value or "")


@route("POST", "/storage/{kind}/clear", mutating=True)
async def storage_clear(call: ControlCall) -> dict[str, Any]:
    """Clear the storage of the tab's origin, or one ``key``."""
    return await _storage(call, "clear", call.text("key"))


@route("POST", "/permissions/grant", mutating=True)
async def grant_permissions(call: ControlCall) -> dict[str, Any]:
    """Grant permissions (``geolocation``, ``notifications``, …) to an origin (default: the tab's)."""
    raw = call.arg("permissions")
    permissions = [raw] if isinstance(raw, str) else raw
    if not isinstance(permissions, list) or not permissions or not all(isinstance(p, str) for p in permissions):
        raise act_invalid("permissions must be a non-empty array of names")
    page = await call.engine.page(call.target_id)
    origin = call.text("origin") or origin_of(page.url)
    try:
        await call.engine.context.grant_permissions(permissions, origin=origin)
    except PlaywrightError as exc:
        raise act_invalid(f"Could not grant {', '.join(permissions)}: {exc.message}") from exc
    return {"ok": True, "targetId": await call.engine.target_id_of(page), "permissions": permissions, "origin": origin}
