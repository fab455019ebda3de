"""``openbrowse browser <id> set …``: overrides for every tab of the browser (spec §20.2 ``POST {B}/set/{what}``).

Each sends the value in the seed client's field names (``offline``, ``headers``, ``username``/``password``,
``latitude``/``longitude``, ``colorScheme``, ``timezoneId``, ``locale``, ``name``), or ``{clear:true}`` with
``--clear``; the server answers with all overrides now in force, which is what is printed.
"""

from __future__ import annotations

from typing import Any

import click

from openbrowse.cli.browser_client import ControlClient
from openbrowse.cli.browser_command import Shown, control_command, json_argument
from openbrowse.cli.browser_render import value_text

__all__ = ["settings"]

CLEAR_HELP = "Remove this override."


@click.group("set")
def settings() -> None:
    """Overrides for the whole browser: offline, headers, credentials, geolocation, media, timezone, locale, device."""


def _apply(control: ControlClient, what: str, value: dict[str, Any] | None, *, clear: bool) -> Shown:
    if clear:
        body = control.post(f"/set/{what}", {"clear": True})
    elif value is None:
        raise click.UsageError(f"give the {what} value, or --clear")
    else:
        body = control.post(f"/set/{what}", value)
    overrides = body.get("overrides")
    return Shown(body, value_text(overrides) if overrides is not None else f"{what} {'cleared' if clear else 'set'}")


@control_command("offline")
@click.argument("state", type=click.Choice(["on", "off"]))
def offline(control: ControlClient, state: str) -> Shown:
    """Cut the network off (on) or restore it (off)."""
    return _apply(control, "offline", {"offline": state == "on"}, clear=False)


@control_command("headers")
@click.argument("headers_json", required=False)
@click.option(
    "--headers-json", "headers_option", help='Extra request headers as a JSON object, e.g. \'{"X-Debug":"1"}\'.'
)
@click.option("--clear", is_flag=True, help=CLEAR_HELP)
def headers(control: ControlClient, headers_json: str | None, headers_option: str | None, clear: bool) -> Shown:
    """Send extra HTTP headers with every request."""
    source = headers_option or headers_json
    value = {"headers": json_argument(source, "--headers-json", kind=dict)} if source else None
    return _apply(control, "headers", value, clear=clear)


@control_command("credentials")
@click.argument("username", required=False)
@click.argument("password", required=False)
@click.option("--clear", is_flag=True, help=CLEAR_HELP)
def credentials(control: ControlClient, username: str | None, password: str | None, clear: bool) -> Shown:
    """Answer HTTP Basic authentication with USERNAME and PASSWORD."""
    value = {"username": username, "password": password or ""} if username else None
    return _apply(control, "credentials", value, clear=clear)


@control_command("geolocation", context_settings={"ignore_unknown_options": True})
@click.argument("latitude", type=click.FloatRange(-90, 90), required=False)
@click.argument("longitude", type=click.FloatRange(-180, 180), required=False)
@click.option("--accuracy", type=click.FloatRange(min=0), help="Accuracy in metres.")
@click.option("--origin", help="Grant the geolocation permission to this origin.")
@click.option("--clear", is_flag=True, help=CLEAR_HELP)
def geolocation(
    control: ControlClient,
    latitude: float | None,
    longitude: float | None,
    accuracy: float | None,
    origin: str | None,
    clear: bool,
) -> Shown:
    """Report LATITUDE LONGITUDE as the device's position (negative numbers work as they are)."""
    value = None
    if latitude is not None and longitude is not None:
        value = {"latitude": latitude, "longitude": longitude, "accuracy": accuracy, "origin": origin}
    return _apply(control, "geolocation", value, clear=clear)


@control_command("media")
@click.argument("color_scheme", type=click.Choice(["dark", "light", "no-preference", "none"]), required=False)
@click.option("--clear", is_flag=True, help=CLEAR_HELP)
def media(control: ControlClient, color_scheme: str | None, clear: bool) -> Shown:
    """Emulate prefers-color-scheme."""
    return _apply(control, "media", {"colorScheme": color_scheme} if color_scheme else None, clear=clear)


@control_command("timezone")
@click.argument("timezone_id", required=False)
@click.option("--clear", is_flag=True, help=CLEAR_HELP)
def timezone(control: ControlClient, timezone_id: str | None, clear: bool) -> Shown:
    """Emulate a time zone, e.g. America/New_York."""
    return _apply(control, "timezone", {"timezoneId": timezone_id} if timezone_id else None, clear=clear)


@control_command("locale")
@click.argument("locale_name", metavar="LOCALE", required=False)
@click.option("--clear", is_flag=True, help=CLEAR_HELP)
def locale(control: ControlClient, locale_name: str | None, clear: bool) -> Shown:
    """Emulate a locale, e.g. en-US."""
    return _apply(control, "locale", {"locale": locale_name} if locale_name else None, clear=clear)


@control_command("device")
@click.argument("name", required=False)
@click.option("--clear", is_flag=True, help=CLEAR_HELP)
def device(control: ControlClient, name: str | None, clear: bool) -> Shown:
    """Emulate a Playwright device preset, e.g. "iPhone 14" (viewport, user agent, touch)."""
    return _apply(control, "device", {"name": name} if name else None, clear=clear)


for command in (offline, headers, credentials, geolocation, media, timezone, locale, device):
    settings.add_command(command)
settings.add_command(geolocation, "geo")
