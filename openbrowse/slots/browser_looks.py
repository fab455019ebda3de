"""How every slot's Chromium looks to the sites it visits (spec §28.2): the flags and environment that make it one.

The browser is Debian's Chromium, headful on a real X display, so most of what detectors test for (a
``HeadlessChrome`` user agent, no plugins, ``Notification.permission`` "denied" with ``permissions.query``
"prompt", a 0x0 outer window, no ``window.chrome``) is already right without any override. What is set here, for
agent sessions, raw browsers and the MCP tools' shared browser alike (all of them start through
:class:`~.slot_children.SlotChildren`):

* ``--disable-blink-features=AutomationControlled``: ``navigator.webdriver`` is false even for a client that
  launches Chromium with ``--enable-automation`` (plain Playwright does; our launch never did, so this is a
  guarantee rather than a change). It changes nothing a CDP client relies on.
* WebGL on software GL: Xvfb has no GPU and Chromium refuses its SwiftShader fallback for WebGL unless told, so a
  page got no WebGL context at all, which no desktop Chrome shows. ``--use-angle=swiftshader`` with
  ``--enable-unsafe-swiftshader`` renders WebGL 1 and 2 on the CPU through the SwiftShader Vulkan ICD that Debian's
  ``chromium`` package ships (no new package, and it runs inside Chromium's own GPU sandbox and ours);
  ``--disable-gpu-compositing`` keeps the compositor in software as before, since compositing every frame through
  SwiftShader made pages without WebGL cost 3-5x the CPU (``bench/software_gl.py``). The renderer string a page
  reads is ANGLE's honest one, ``ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero) ...), SwiftShader
  driver)``: what Chrome on a machine without a usable GPU reports, not a faked vendor. ``CHROME_LIGHT_FLAGS``
  (``--disable-gpu``) turns this off again for small machines.
* One language and one time zone everywhere a page looks: ``--lang`` and ``--accept-lang`` from
  ``BROWSER_LOCALE`` (``navigator.language``, ``navigator.languages``, ``Intl`` and the ``Accept-Language``
  header: ``de-DE`` gives ``de-DE,de``), and ``TZ`` from ``BROWSER_TIMEZONE`` (``Intl``'s zone and ``Date``'s
  offsets). Unset, the zone is the host's (``TZ``, ``/etc/timezone``, the ``/etc/localtime`` link), else UTC.
  One gap: ``Intl``'s default locale is Chromium's application locale, and Debian's ``chromium`` ships only the
  ``en-US`` one (the others are in ``chromium-l10n``), so with another ``BROWSER_LOCALE`` and without that package
  ``Intl.DateTimeFormat().resolvedOptions().locale`` stays ``en-US`` while ``navigator.language`` follows.

What is deliberately not set: a user-agent override. Chromium's own user agent already says ``Chrome/<major>``
and never ``Headless``; its client hints name the brand ``Chromium``, which is what this browser is. Presenting
"Google Chrome" instead would need ``Emulation.setUserAgentOverride`` with client-hint metadata on every target,
workers included, from a connection that outlives every client's; one target missed (a service worker, a page
opened before the override landed) shows two different browsers, which detectors look for. A real, consistent
Chromium is the safer look.
"""

from __future__ import annotations

import os
import re
import zoneinfo
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from openbrowse.errors import ConfigError

if TYPE_CHECKING:
    from openbrowse.config import Settings

__all__ = ["LOOKS_FLAGS", "SOFTWARE_GL_FLAGS", "BrowserLooks", "browser_looks", "host_time_zone"]

LOOKS_FLAGS: tuple[str, ...] = ("--disable-blink-features=AutomationControlled",)
SOFTWARE_GL_FLAGS: tuple[str, ...] = (
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--disable-gpu-compositing",
)
FALLBACK_ZONE = "UTC"
ZONEINFO = "/usr/share/zoneinfo/"


@dataclass(frozen=True, slots=True)
class BrowserLooks:
    """The language and time zone one browser presents, and the flags and environment that make it do so."""

    locale: str
    """A BCP 47 tag such as ``en-US``."""
    time_zone: str
    """An IANA zone name such as ``Europe/Berlin``."""

    @property
    def accept_languages(self) -> str:
        """The list Chromium sends as ``Accept-Language`` (with q-values it adds) and shows as
        ``navigator.languages``: the tag, then its bare language (``de-DE`` → ``de-DE,de``)."""
        language = self.locale.split("-")[0]
        return self.locale if language == self.locale else f"{self.locale},{language}"

    def flags(self, *, software_gl: bool = True) -> list[str]:
        flags = [*LOOKS_FLAGS, f"--lang={self.locale}", f"--accept-lang={self.accept_languages}"]
        return flags + list(SOFTWARE_GL_FLAGS) if software_gl else flags

    def environment(self) -> dict[str, str]:
        """``TZ`` for the zone. The locale needs no variable: ``--lang`` sets Chromium's application locale (a
        glibc ``LANG`` the host may lack would only log warnings)."""
        return {"TZ": self.time_zone}


def browser_looks(settings: Settings) -> BrowserLooks:
    """What ``settings`` ask for; :class:`ConfigError` for a zone no tz database knows (checked at start-up by
    ``create_app``, so it never surfaces as a failed slot)."""
    return _looks(settings.BROWSER_LOCALE, settings.BROWSER_TIMEZONE or host_time_zone())


@cache
def _looks(locale: str, zone: str) -> BrowserLooks:
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"BROWSER_TIMEZONE={zone} is not a known IANA time zone (for example Europe/Berlin)") from exc
    return BrowserLooks(locale, zone)


@cache
def host_time_zone() -> str:
    """The host's zone name: ``TZ`` (a name, not a POSIX rule), ``/etc/timezone``, the ``/etc/localtime`` link,
    else UTC. Read once per process (tiny files)."""
    configured = os.environ.get("TZ", "").lstrip(":")
    if _is_zone_name(configured):
        return configured
    try:
        named = Path("/etc/timezone").read_text().strip()
    except OSError:
        named = ""
    if _is_zone_name(named):
        return named
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        return FALLBACK_ZONE
    linked = target.split(ZONEINFO, 1)[1] if ZONEINFO in target else ""
    return linked if _is_zone_name(linked) else FALLBACK_ZONE


def _is_zone_name(name: str) -> bool:
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*", name):
        return False
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True
