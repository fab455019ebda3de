"""Emulation overrides through the control API: ``POST /set/{offline|headers|credentials|geolocation|media|
timezone|locale|device}`` (spec §20.2).

Overrides hold for every tab of the browser. Playwright applies the context-wide ones itself (offline, extra
headers, HTTP credentials, geolocation); the page-wide ones (colour scheme, timezone, locale, device) are set on each
page and remembered per engine, so a tab opened later gets them too. Timezone, locale and the device's user agent
are DevTools emulation overrides, which last only as long as the DevTools session that set them: that session is
kept open per page.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from playwright.async_api import BrowserContext, CDPSession, Error as PlaywrightError, Page

from openbrowse.control.call import ControlCall, Handler, route
from openbrowse.control.errors import ControlError, act_invalid, operation_failed
from openbrowse.control.page_log import redact_headers

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine

__all__ = ["SETTINGS", "apply_page_overrides", "origin_of", "setting_routes"]

SETTINGS = ("offline", "headers", "credentials", "geolocation", "media", "timezone", "locale", "device")
_COLOR_SCHEMES = {"dark", "light", "no-preference", "none"}


@dataclass(slots=True)
class _Overrides:
    values: dict[str, Any] = field(default_factory=dict)
    """The wire shape of every override in force, keyed by setting."""
    device: dict[str, Any] | None = None
    context: BrowserContext | None = None
    """The context whose new pages get the page-wide overrides (the engine makes a new one on reattach)."""
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


_overrides: weakref.WeakKeyDictionary[ControlEngine, _Overrides] = weakref.WeakKeyDictionary()
_sessions: weakref.WeakKeyDictionary[Page, CDPSession] = weakref.WeakKeyDictionary()


def _of(engine: ControlEngine) -> _Overrides:
    found = _overrides.get(engine)
    if found is None:
        found = _overrides[engine] = _Overrides()
    if found.context is not engine.context:
        found.context = engine.context
        found.context.on("page", lambda page: _spawn(found, apply_page_overrides(engine, page)))
    return found


def _spawn(overrides: _Overrides, work: Any) -> None:
    task: asyncio.Task[None] = asyncio.ensure_future(work)
    overrides.tasks.add(task)
    task.add_done_callback(overrides.tasks.discard)


async def _session(engine: ControlEngine, page: Page) -> CDPSession:
    session = _sessions.get(page)
    if session is None:
        session = _sessions[page] = await engine.context.new_cdp_session(page)
    return session


async def _send(engine: ControlEngine, page: Page, method: str, params: dict[str, Any]) -> None:
    await (await _session(engine, page)).send(method, params)


async def apply_page_overrides(engine: ControlEngine, page: Page) -> None:
    """Give ``page`` the page-wide overrides in force (a new tab, or every tab after a change)."""
    overrides = _overrides.get(engine)
    if overrides is None or page.is_closed():
        return
    values = overrides.values
    with contextlib.suppress(PlaywrightError):  # the page closed meanwhile
        if "media" in values:
            scheme = values["media"]["colorScheme"]
            await page.emulate_media(color_scheme="null" if scheme == "none" else scheme)
        if "timezone" in values:
            await _send(engine, page, "Emulation.setTimezoneOverride", {"timezoneId": values["timezone"]["timezoneId"]})
        if "locale" in values:
            await _send(engine, page, "Emulation.setLocaleOverride", {"locale": values["locale"]["locale"]})
        if overrides.device is not None:
            await _apply_device(engine, page, overrides.device)
        if "locale" in values or overrides.device is not None:
            await _apply_user_agent(engine, page, overrides)


async def _apply_user_agent(engine: ControlEngine, page: Page, overrides: _Overrides) -> None:
    """One user-agent override carries both the device's agent string and the locale's ``Accept-Language``."""
    device_agent = overrides.device.get("user_agent") if overrides.device else None
    locale = overrides.values.get("locale", {}).get("locale")
    if not device_agent and not locale:
        await _send(engine, page, "Emulation.setUserAgentOverride", {"userAgent": ""})
        return
    if not device_agent:
        version = await (await engine.browser_cdp()).send("Browser.getVersion")
        device_agent = version["userAgent"]
    params: dict[str, Any] = {"userAgent": device_agent}
    if locale:
        params["acceptLanguage"] = locale
    await _send(engine, page, "Emulation.setUserAgentOverride", params)


async def _clear_page_override(engine: ControlEngine, page: Page, setting: str) -> None:
    with contextlib.suppress(PlaywrightError):
        if setting == "media":
            await page.emulate_media(color_scheme="null")
        elif setting == "timezone":
            await _send(engine, page, "Emulation.setTimezoneOverride", {"timezoneId": ""})
        elif setting == "locale":
            await _send(engine, page, "Emulation.setLocaleOverride", {})
        elif setting == "device":
            await _send(engine, page, "Emulation.clearDeviceMetricsOverride", {})
            await _send(engine, page, "Emulation.setTouchEmulationEnabled", {"enabled": False})
        overrides = _overrides.get(engine)
        if setting in {"locale", "device"} and overrides is not None:
            await _apply_user_agent(engine, page, overrides)


async def _apply_device(engine: ControlEngine, page: Page, descriptor: dict[str, Any]) -> None:
    viewport = descriptor["viewport"]
    screen = descriptor.get("screen") or viewport
    mobile = bool(descriptor.get("is_mobile", descriptor.get("isMobile", False)))
    landscape = screen["width"] > screen["height"]
    orientation = (
        {"angle": 0, "type": "portraitPrimary"}
        if mobile and not landscape
        else {"angle": 90 if mobile else 0, "type": "landscapePrimary"}
    )
    await page.set_viewport_size({"width": viewport["width"], "height": viewport["height"]})
    await _send(
        engine,
        page,
        "Emulation.setDeviceMetricsOverride",
        {
            "mobile": mobile,
            "width": viewport["width"],
            "height": viewport["height"],
            "deviceScaleFactor": descriptor.get("device_scale_factor", 1),
            "screenWidth": screen["width"],
            "screenHeight": screen["height"],
            "screenOrientation": orientation,
        },
    )
    has_touch = bool(descriptor.get("has_touch", False))
    await _send(engine, page, "Emulation.setTouchEmulationEnabled", {"enabled": has_touch})


def _device_descriptor(engine: ControlEngine, name: str) -> dict[str, Any]:
    devices: dict[str, Any] = engine.playwright.devices
    if not devices:
        raise ControlError(501, "Device presets are not available from this Playwright.", "PLAYWRIGHT_UNAVAILABLE")
    descriptor = devices.get(name)
    if descriptor is None:
        lowered = {key.lower(): value for key, value in devices.items()}
        descriptor = lowered.get(name.lower())
    if descriptor is None:
        raise act_invalid(f"Unknown device {name!r}; use a Playwright device name such as 'iPhone 14'.")
    return dict(descriptor)


async def _set_context_wide(context: BrowserContext, setting: str, value: dict[str, Any] | None) -> None:
    if setting == "offline":
        await context.set_offline(bool(value and value["offline"]))
    elif setting == "headers":
        await context.set_extra_http_headers(dict(value["headers"]) if value else {})
    elif setting == "credentials":
        # Playwright Python does not wrap setHTTPCredentials; its protocol still carries it.
        credentials: Any = [{"username": value["username"], "password": value["password"]}] if value else None
        await context._impl_obj._channel.setHTTPCredentials(httpCredentials=credentials)
    elif setting == "geolocation":
        if value is None:
            await context.set_geolocation(None)
            return
        location = {key: value[key] for key in ("latitude", "longitude", "accuracy") if value.get(key) is not None}
        await context.set_geolocation(location)  # type: ignore[arg-type]
        if value.get("origin"):
            await context.grant_permissions(["geolocation"], origin=value["origin"])


def _parse_setting(call: ControlCall, setting: str, page: Page) -> dict[str, Any]:
    """The override ``setting`` asks for, in its wire shape (secrets included; :func:`_shown` hides them)."""
    if setting == "offline":
        raw = call.arg("offline") if call.arg("offline") is not None else call.arg("value")
        if raw is None:
            raise act_invalid("offline is required")
        return {"offline": call.flag("offline") if call.arg("offline") is not None else call.flag("value")}
    if setting == "headers":
        headers = call.arg("headers") if call.arg("headers") is not None else call.arg("value")
        if not isinstance(headers, dict):
            raise act_invalid("headers is required")
        return {"headers": {str(key): str(value) for key, value in headers.items() if isinstance(value, str)}}
    if setting == "credentials":
        username = call.text("username", required=True)
        password = call.arg("password")
        return {"username": username, "password": password if isinstance(password, str) else ""}
    if setting == "geolocation":
        latitude, longitude = call.number("latitude"), call.number("longitude")
        if latitude is None or longitude is None:
            raise act_invalid("latitude and longitude are required (or set clear=true)")
        if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
            raise act_invalid("latitude must be in -90..90 and longitude in -180..180")
        origin = call.text("origin") or origin_of(page.url)
        return {"latitude": latitude, "longitude": longitude, "accuracy": call.number("accuracy"), "origin": origin}
    if setting == "media":
        scheme = call.text("colorScheme") or call.text("value")
        if scheme not in _COLOR_SCHEMES:
            raise act_invalid("colorScheme must be dark|light|no-preference|none")
        return {"colorScheme": scheme}
    if setting == "timezone":
        return {"timezoneId": call.text("timezoneId") or call.text("value", required=True)}
    if setting == "locale":
        return {"locale": call.text("locale") or call.text("value", required=True)}
    return {"name": call.text("name") or call.text("value", required=True)}


def origin_of(url: str) -> str | None:
    if not url.startswith(("http://", "https://")):
        return None
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}"


def _shown(values: dict[str, Any]) -> dict[str, Any]:
    shown = dict(values)
    if "credentials" in shown:
        shown["credentials"] = {"username": shown["credentials"]["username"], "password": "[redacted]"}
    if "headers" in shown:
        shown["headers"] = {"headers": redact_headers(shown["headers"]["headers"])}
    return shown


def _setting_route(setting: str) -> None:
    async def handler(call: ControlCall) -> dict[str, Any]:
        page = await call.engine.page(call.target_id)
        overrides = _of(call.engine)
        value = None if call.flag("clear") else _parse_setting(call, setting, page)
        descriptor = _device_descriptor(call.engine, value["name"]) if setting == "device" and value else None
        try:
            if setting in {"offline", "headers", "credentials", "geolocation"}:
                await _set_context_wide(call.engine.context, setting, value)
            if value is None:
                overrides.values.pop(setting, None)
                if setting == "device":
                    overrides.device = None
                for each in call.engine.context.pages:
                    await _clear_page_override(call.engine, each, setting)
            else:
                overrides.values[setting] = value
                if setting == "device":
                    overrides.device = descriptor
                for each in call.engine.context.pages:
                    await apply_page_overrides(call.engine, each)
        except PlaywrightError as exc:
            raise operation_failed(f"Could not set {setting}: {exc.message}") from exc
        return {"ok": True, "targetId": await call.engine.target_id_of(page), "overrides": _shown(overrides.values)}

    handler.__doc__ = f"Set or clear the {setting} override for every tab."
    setting_routes[setting] = route("POST", f"/set/{setting}", mutating=True)(handler)


setting_routes: dict[str, Handler] = {}


for _setting in SETTINGS:
    _setting_route(_setting)
