"""The browser of a slot: which binary, which flags, and one supervised Chromium with a single active tab.

Binary resolution (spec §3 ``CHROME_BINARY``; seed chrome-backend "browser selection"):

1. ``CHROME_BINARY`` when set. It must name an existing executable (a bare name is looked up on ``PATH``);
   otherwise :class:`BrowserUnavailable` names the setting. There is no silent fallback from an explicit path.
2. CloakBrowser's patched Chromium when the ``cloakbrowser`` package is installed *and* its browser is already
   on disk: ``$CLOAKBROWSER_BINARY_PATH``, else the newest ``chromium-<version>[-pro]/chrome`` in
   ``$CLOAKBROWSER_CACHE_DIR`` (default ``~/.cloakbrowser``). Nothing is downloaded and the package is not
   imported (0.6.4 fails to import with playwright >= 1.65). This binary gets CloakBrowser's stealth flags.
3. The system Chromium: ``/usr/lib/chromium/chromium`` (the real binary behind Debian's shell wrapper), then
   ``chromium``, ``chromium-browser``, ``google-chrome``, ``google-chrome-stable`` on ``PATH``.

Local files are out of reach of pages, agents and raw-browser clients: before Chromium starts, its fresh profile
gets the preference behind the ``URLBlocklist`` policy, ``policy.url_blocklist = ["file://*"]`` (see
:func:`block_local_files`). It is read per profile, so unlike a managed policy in ``/etc/chromium/policies`` it
never reaches a developer's own Chromium, and it needs no root. ``file://`` navigations, iframes and
``view-source:file://`` end in ``ERR_BLOCKED_BY_ADMINISTRATOR``.

Pitfall 1 of the platform notes (a background tab makes every screenshot hang 15 s) is handled by starting
with exactly one ``about:blank`` tab and, once CDP answers, closing any extra page and activating the one left.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import random
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from openbrowse.errors import BrowserUnavailable, ProcessStartError
from openbrowse.slots.layout import SCREEN_HEIGHT, SCREEN_WIDTH
from openbrowse.slots.probes import CdpVersionProbe, loopback_http_json
from openbrowse.slots.process import ManagedProcess, ProcessHook
from openbrowse.slots.sandbox import give_to

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from openbrowse.config import Settings
    from openbrowse.slots.netns import SlotNetwork

__all__ = [
    "LIGHT_FLAGS",
    "BrowserBinary",
    "BrowserProcess",
    "block_local_files",
    "chromium_argv",
    "ensure_single_active_tab",
    "find_browser_binary",
    "find_cloakbrowser_binary",
]

logger = logging.getLogger(__name__)

BinarySource = Literal["CHROME_BINARY", "cloakbrowser", "system"]

SYSTEM_BINARIES: tuple[str, ...] = ("/usr/lib/chromium/chromium",)
PATH_NAMES: tuple[str, ...] = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

BASE_FLAGS: tuple[str, ...] = (
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--password-store=basic",
    "--window-position=0,0",
)
ROOT_FLAGS: tuple[str, ...] = ("--no-sandbox", "--test-type")  # --test-type hides the --no-sandbox infobar
CONTAINER_MARKERS = (Path("/.dockerenv"), Path("/run/.containerenv"))


def needs_no_sandbox() -> bool:
    """Chromium's sandbox cannot run as root, nor (without extra privileges) inside a container, where the
    container is the isolation boundary."""
    return os.geteuid() == 0 or any(marker.exists() for marker in CONTAINER_MARKERS)


# Spec §3 CHROME_LIGHT_FLAGS: no GPU, <=4 renderers, 256 MB JS heap, low-end mode; site isolation kept.
LIGHT_FLAGS: tuple[str, ...] = (
    "--disable-gpu",
    "--renderer-process-limit=4",
    "--js-flags=--max-old-space-size=256",
    "--enable-low-end-device-mode",
)
BLOCKED_URLS: tuple[str, ...] = ("file://*",)
CDP_READY_TIMEOUT = 30.0
TAB_READY_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class BrowserBinary:
    path: Path
    source: BinarySource
    stealth: bool = False


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _version_key(path: Path) -> tuple[int, ...]:
    match = re.match(r"chromium-([\d.]+)", path.parent.name)
    return tuple(int(part) for part in match.group(1).split(".") if part) if match else ()


def find_cloakbrowser_binary(environ: Mapping[str, str] | None = None) -> Path | None:
    """CloakBrowser's already-downloaded browser, or None. Never downloads and never imports the package."""
    env = os.environ if environ is None else environ
    if importlib.util.find_spec("cloakbrowser") is None:
        return None
    override = env.get("CLOAKBROWSER_BINARY_PATH")
    if override:
        path = Path(override).expanduser()
        if _is_executable(path):
            return path
        logger.warning("CLOAKBROWSER_BINARY_PATH=%s is not an executable file; ignoring it", override)
        return None
    cache = Path(env.get("CLOAKBROWSER_CACHE_DIR") or Path.home() / ".cloakbrowser").expanduser()
    try:
        candidates = sorted(cache.glob("chromium-*/chrome"), key=_version_key, reverse=True)
    except OSError:
        return None
    return next((path for path in candidates if _is_executable(path)), None)


def find_browser_binary(settings: Settings, environ: Mapping[str, str] | None = None) -> BrowserBinary:
    """Resolve the browser executable as described in the module docstring."""
    configured = settings.CHROME_BINARY
    if configured:
        path = Path(configured).expanduser()
        if "/" not in configured and (found := shutil.which(configured)):
            path = Path(found)
        if not _is_executable(path):
            raise BrowserUnavailable(
                f"CHROME_BINARY={configured} does not exist or is not an executable file; "
                "fix the CHROME_BINARY setting or unset it to use the system Chromium"
            )
        return BrowserBinary(path, "CHROME_BINARY")
    cloak = find_cloakbrowser_binary(environ)
    if cloak is not None:
        return BrowserBinary(cloak, "cloakbrowser", stealth=True)
    for candidate in SYSTEM_BINARIES:
        if _is_executable(Path(candidate)):
            return BrowserBinary(Path(candidate), "system")
    for name in PATH_NAMES:
        if found := shutil.which(name):
            return BrowserBinary(Path(found), "system")
    raise BrowserUnavailable(
        "No Chromium browser found (looked for CloakBrowser's download, /usr/lib/chromium/chromium and "
        f"{', '.join(PATH_NAMES)} on PATH); install Chromium or set CHROME_BINARY to a browser executable"
    )


def chromium_argv(
    binary: BrowserBinary,
    *,
    cdp_port: int,
    user_data_dir: Path,
    light: bool = False,
    as_root: bool | None = None,
    window_size: tuple[int, int] = (SCREEN_WIDTH, SCREEN_HEIGHT),
    start_url: str = "about:blank",
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The full command line. Exactly one URL is passed, so Chromium opens exactly one tab."""
    if as_root is None:
        as_root = needs_no_sandbox()
    width, height = window_size
    argv = [
        str(binary.path),
        f"--remote-debugging-port={cdp_port}",
        "--remote-debugging-address=127.0.0.1",
        f"--user-data-dir={user_data_dir}",
        *BASE_FLAGS,
        f"--window-size={width},{height}",
    ]
    if as_root:
        argv += ROOT_FLAGS
    if binary.stealth:  # CloakBrowser's defaults: a random fingerprint seed per launch, Windows profile
        argv += [f"--fingerprint={random.randint(10000, 99999)}", "--fingerprint-platform=windows"]
    if light:
        argv += LIGHT_FLAGS
    argv += extra_args
    argv.append(start_url)
    return argv


async def ensure_single_active_tab(
    port: int, *, within: float = TAB_READY_TIMEOUT, network: SlotNetwork | None = None
) -> str:
    """Wait for the first page target, close any other page, activate the one left; return its target id.
    ``network``: the slot's namespace, where a sandboxed Chromium listens."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    delay = 0.005
    while True:
        status, targets = await loopback_http_json(port, "/json/list", network=network)
        pages: list[dict[str, Any]] = (
            [t for t in targets if isinstance(t, dict) and t.get("type") == "page"] if status == 200 else []
        )
        if pages:
            break
        if loop.time() >= deadline:
            raise ProcessStartError(f"Chromium on CDP port {port} opened no tab within {within:.1f} s")
        await asyncio.sleep(delay)
        delay = min(delay * 1.6, 0.2)
    keep, extra = pages[0], pages[1:]
    for target in extra:
        logger.info("Closing extra Chromium tab %s (%s)", target.get("id"), target.get("url"))
        await loopback_http_json(port, f"/json/close/{target['id']}", network=network)
    await loopback_http_json(port, f"/json/activate/{keep['id']}", network=network)
    return str(keep["id"])


@dataclass
class BrowserProcess:
    """One Chromium on a slot's display, with a fresh user-data dir wiped before use and deleted after."""

    binary: BrowserBinary
    display: str
    cdp_port: int
    user_data_dir: Path
    env: Mapping[str, str]
    light: bool = False
    window_size: tuple[int, int] = (SCREEN_WIDTH, SCREEN_HEIGHT)
    on_spawn: ProcessHook | None = None
    on_exit: ProcessHook | None = None
    terminate_grace: float = 5.0
    ready_timeout: float = CDP_READY_TIMEOUT
    wrap: Callable[[list[str]], list[str]] | None = None
    """Enters the slot's sandbox (spec §24.2); Chromium then keeps its own sandbox on."""
    owner_uid: int | None = None
    """The sandbox uid that must own the fresh profile."""
    network: SlotNetwork | None = None
    """The sandbox's network namespace, where Chromium's DevTools port is (None: the host's loopback)."""
    extra_args: Sequence[str] = ()
    process: ManagedProcess | None = field(default=None, init=False)
    version: dict[str, Any] | None = field(default=None, init=False)
    target_id: str | None = field(default=None, init=False)

    @property
    def cdp_url(self) -> str:
        return f"http://127.0.0.1:{self.cdp_port}"

    @property
    def ws_url(self) -> str:
        if self.version is None:
            raise RuntimeError("Chromium is not ready")
        return str(self.version["webSocketDebuggerUrl"])

    def spawn(self) -> ManagedProcess:
        """Start the process (the user-data dir must already be fresh); readiness is :meth:`wait_ready`."""
        argv = chromium_argv(
            self.binary,
            cdp_port=self.cdp_port,
            user_data_dir=self.user_data_dir,
            light=self.light,
            window_size=self.window_size,
            as_root=False if self.wrap is not None else None,
            extra_args=self.extra_args,
        )
        block_local_files(self.user_data_dir, self.user_data_dir.parent / "downloads")
        if self.owner_uid is not None:
            give_to(self.owner_uid, self.user_data_dir)
        env = {**self.env, "DISPLAY": self.display}
        self.process = ManagedProcess(
            "Chromium",
            argv if self.wrap is None else self.wrap(argv),
            env=env,
            terminate_grace=self.terminate_grace,
            on_spawn=self.on_spawn,
            on_exit=self.on_exit,
        )
        self.process.start()
        return self.process

    async def wait_ready(self) -> None:
        assert self.process is not None
        probe = CdpVersionProbe(self.cdp_port, self.network)
        await self.process.wait_ready(probe, within=self.ready_timeout)
        self.version = probe.version  # pinned: read before anything untrusted ran in the slot, never again
        self.target_id = await ensure_single_active_tab(self.cdp_port, network=self.network)

    async def aclose(self) -> None:
        if self.process is not None:
            await self.process.aclose()


def block_local_files(user_data_dir: Path, downloads_dir: Path | None = None) -> None:
    """Seed a fresh profile with the URL blocklist that keeps ``file://`` out of the browser, and with the slot's
    downloads folder as the default one (a CDP client that never sets a download behaviour, or whose setting ends
    with its connection, still downloads there) (blocking, tiny)."""
    preferences = user_data_dir / "Default" / "Preferences"
    preferences.parent.mkdir(parents=True, exist_ok=True)
    seed: dict[str, Any] = {"policy": {"url_blocklist": list(BLOCKED_URLS)}}
    if downloads_dir is not None:
        seed["download"] = {"default_directory": str(downloads_dir), "prompt_for_download": False}
        seed["savefile"] = {"default_directory": str(downloads_dir)}
    preferences.write_text(json.dumps(seed))


def prepare_fresh_dir(path: Path) -> None:
    """Delete ``path`` if it exists and create it empty (blocking; call through ``asyncio.to_thread``)."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=False)
