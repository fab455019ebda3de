"""Settings: every environment variable the service reads, validated once at start-up.

Settings are built by :meth:`Settings.load` (called from ``__main__`` or ``create_app``), never at import
time. ``OPENBROWSE_HOME`` is read from the real environment only, because it decides which ``.env`` is read.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import pwd
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from openbrowse.config_browser import BrowserSettings
from openbrowse.config_cluster import ClusterSettings, node_identity
from openbrowse.config_files import FileSettings
from openbrowse.errors import ConfigError

LAST_SLOT_INDEX = 169
SCRIPT_UID_OFFSET = LAST_SLOT_INDEX + 1
"""Slot ``i``'s script host runs as ``SANDBOX_UID_BASE + SCRIPT_UID_OFFSET + i``: above every slot's own uid, so
the two ranges never meet whatever the slot indexes."""
"""Slot 170 would put a VNC port (5910+i) on the first noVNC port (6080)."""

_LOOPBACK_NAMES = {"localhost", "ip6-localhost", "ip6-loopback"}
"""Names that mean loopback by convention (``/etc/hosts``); any other name may resolve anywhere."""


def _user_home() -> Path:
    sudo_user = os.environ.get("SUDO_USER")
    if sudo_user and os.geteuid() == 0:
        try:
            return Path(pwd.getpwnam(sudo_user).pw_dir)
        except KeyError:
            pass
    return Path.home()


def default_home() -> Path:
    """The repo root for a source checkout, else ``~/.openbrowse``."""
    explicit = os.environ.get("OPENBROWSE_HOME")
    if explicit:
        return Path(explicit).expanduser().resolve()
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "openbrowse").is_dir():
        return checkout
    return _user_home() / ".openbrowse"


def is_loopback(host: str) -> bool:
    """Exactly the loopback names and addresses (127.0.0.0/8, ``::1``), never a name that merely starts like one:
    ``127.example.com`` is a DNS name that can point anywhere (spec §25.2)."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def constant_time_same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def webhook_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a webhook target, or None (the network policy is checked at delivery)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "a webhook URL must be an absolute http:// or https:// URL"
    if len(url) > 2048:
        return "a webhook URL must be at most 2048 characters"
    return None


PROXY_SETTINGS = ("ALLOWED_HOSTS", "CORS_ORIGINS", "FORWARDED_ALLOW_IPS")
"""Settings that mean the server is reached through a proxy or from other origins: each requires ``API_KEY``."""


def _comma_list(value: str | None) -> tuple[str, ...]:
    return tuple(item.strip() for item in (value or "").split(",") if item.strip())


class Settings(ClusterSettings, BrowserSettings, FileSettings):
    """All configuration. Field names are the documented environment variable names."""

    model_config = SettingsConfigDict(
        env_file=None,
        env_ignore_empty=True,
        extra="ignore",
        case_sensitive=True,
        frozen=True,
    )

    OPENBROWSE_HOME: Path = Field(default_factory=default_home)
    OPENBROWSE_DATA_DIR: Path | None = None
    OPENBROWSE_FILES_DIR: Path | None = None
    """Where sessions' and raw browsers' files live (recordings, downloads, uploads). Default: the data directory;
    for several nodes it may be a shared mount (spec §26.1)."""
    HOST: str = "127.0.0.1"
    PORT: int = Field(default=8420, ge=0, le=65535)
    API_KEY: str | None = None
    ALLOW_INSECURE_NO_AUTH: bool = False
    DASHBOARD_USER: str = "admin"
    DASHBOARD_PASSWORD: str | None = None
    """The dashboard's own secret (login form and HTTP Basic); never the API key. Required with ``API_KEY`` on a
    non-loopback bind; unset elsewhere, the dashboard takes only the API key header (spec §25.2)."""
    DOCS_ENABLED: bool | None = None
    """Serve ``/docs`` (Swagger UI from local files). Default: on only while ``HOST`` is a loopback address."""

    ALLOWED_HOSTS: str | None = None
    """Extra names accepted in the ``Host`` header, comma-separated (``*.example.com`` matches subdomains)."""
    CORS_ORIGINS: str | None = None
    """Origins (``https://app.example.com``) allowed to call the API from a browser, comma-separated."""
    FORWARDED_ALLOW_IPS: str | None = None
    """Proxies whose ``X-Forwarded-For``/``-Proto`` are believed (uvicorn's setting); none by default."""

    ANTHROPIC_API_KEY: str | None = None
    OPENAI_API_KEY: str | None = None
    ANTHROPIC_BASE_URL: str | None = None
    OPENAI_BASE_URL: str | None = None
    OPENAI_API_STYLE: Literal["responses", "chat"] | None = None
    DEFAULT_MODEL: str | None = None

    CAPSOLVER_API_KEY: str | None = None
    CAPTCHA_MAX_COST_USD: float = Field(default=0.03, ge=0)
    CAPSOLVER_BASE_URL: str = "https://api.capsolver.com"

    MAX_CONCURRENT_SESSIONS: int = Field(default=1, ge=1)
    PREWARM_SLOTS: int = Field(default=1, ge=0)
    """Slots kept pre-started (Xvfb + Chromium, fresh profile) while a slot is free and nobody waits, so a new
    session or browser starts at once; 0 turns it off. A spare is never counted as a session and never reused."""
    KEEP_ALIVE_IDLE_TIMEOUT: int = Field(default=600, ge=0)
    TASK_TIMEOUT: int = Field(default=3600, ge=0)
    CLOUD_MAX_COST_FACTOR: float = Field(default=1.0, gt=0, le=1)

    PROVIDER_TIMEOUT: float | None = Field(default=None, gt=0)
    """Overrides the provider client timeouts (Anthropic 180 s; OpenAI 90 s, 240 s at high+), e.g. for slow
    local models."""

    SLOT_BASE_INDEX: int = Field(default=0, ge=0, le=LAST_SLOT_INDEX)
    """First slot index. Raise it to run a second instance on a host where another one already uses display
    :10 and ports 5910/6080/9222."""

    NETWORK_POLICY: Literal["open", "public-only"] = "public-only"
    """``public-only`` (default) refuses loopback, private, link-local and unspecified addresses for every way out of
    a slot and for ``http_fetch``; ``open`` allows them. Both always refuse cloud metadata, link-local addresses,
    this service's own port and every slot's endpoints (spec §19.2)."""
    NETWORK_ALLOWED_HOSTS: str | None = None
    """Holes in ``public-only``: host names with ``*`` wildcards, IP literals or CIDR blocks, comma-separated.
    Distinct from ``ALLOWED_HOSTS`` (the HTTP ``Host`` allow-list)."""

    PROXY_POOL: str | None = None
    """``proxyCountryCode``'s proxies (spec §28.1): ``us=http://user:pass@p1:8000,de=socks5://p2:1080``."""
    PROXY_DEFAULT_COUNTRY: str | None = None  # the pool entry used when a request names no proxy; unset: direct
    PROXY_COST_PER_GB: float = Field(default=0.0, ge=0, allow_inf_nan=False)  # USD per 10^9 bytes, in maxCostUsd
    SHUTDOWN_GRACE_S: float = Field(default=20, ge=0)
    """Seconds from a SIGTERM to the end of the sessions and raw browsers still running (``endReason:
    maintenance``); viewers and event streams are warned when the drain starts (spec §21.6). With anything running
    at the signal, the server exits only after that time, never before."""
    PAUSE_TIMEOUT: int = Field(default=900, ge=0)
    """Seconds a paused session waits for its person after their last input before the agent resumes by itself
    (``pauseExpired``, spec §21.5); 0 = wait for ever."""
    CONTROL_EVALUATE: bool = True
    """Whether the browser control API runs page JavaScript for ``act evaluate`` and ``wait fn`` (spec §20.4);
    off, both get 403 ``ACT_EVALUATE_DISABLED``."""
    SHARED_BROWSER_IDLE_S: float = Field(default=300, gt=0)
    """Seconds the shared browser of the MCP browser tools (one Chromium, one context per MCP session; spec §23.3)
    stays up with no MCP session using it; it starts again on the next browser tool call."""
    MCP_OWNER_IDLE_S: float = Field(default=1800, gt=0)
    """Seconds an owner of the MCP browser tools (an MCP session, or a ``contextId`` handle from
    ``open_browser_context``) may go without a call before its browser context is closed; a later call with an
    expired handle gets an ``isError`` result saying so (spec §23.3)."""

    ALLOW_UNSANDBOXED: bool = False
    """Run slots without the per-slot sandbox (own uid, namespaces, cgroup limits) where the kernel refuses it.
    Development only: a hostile page can then reach the host (spec §24.2)."""
    SANDBOX_UID_BASE: int = Field(default=61000, ge=1000, le=2**31 - 2 - SCRIPT_UID_OFFSET - LAST_SLOT_INDEX)
    """Slot ``i`` runs its sandboxed processes as uid and gid ``SANDBOX_UID_BASE + i`` (no passwd entry needed), and
    its script host as ``SANDBOX_UID_BASE + 170 + i`` (:data:`SCRIPT_UID_OFFSET`), so a script cannot signal the
    browser or read its profile."""
    SLOT_MEMORY_MB: int = Field(default=2048, ge=256)
    """Memory cap of one slot's sandbox (browser, display and scripts) in MiB (spec §24.5)."""
    SLOT_CPU: float = Field(default=1.0, gt=0)
    """CPU cap of one slot's sandbox in cores (spec §24.5)."""
    SLOT_PIDS: int = Field(default=512, ge=64)
    """Most processes and threads one slot's sandbox may hold (spec §24.5)."""
    SLOT_DISK_MB: int = Field(default=1024, ge=16)
    """Disk cap of one slot's writable area (profile copy, downloads, uploads, scratch) in MiB (spec §24.5)."""

    LOG_LEVEL: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    LOG_FORMAT: Literal["text", "json"] = "text"
    """``json``: one JSON object per line per log event, with ``sessionId`` when there is one (spec §19.3)."""

    WEBHOOK_URL: str | None = None
    """Where every session status change, pause and raw-browser end is POSTed (spec §22.4); a session's own
    ``webhookUrl`` gets its events too."""
    WEBHOOK_SECRET: str | None = None
    """Signs each webhook as Browser Use does (``X-Browser-Use-Signature``); unset, webhooks go unsigned."""
    WEBHOOK_TIMEOUT_S: float = Field(default=10, gt=0, le=60)
    """Seconds one delivery attempt may take before it counts as failed and is retried."""
    WEBHOOK_RETRY_BASE_S: float = Field(default=5, gt=0)
    """Delay before the first retry of a failed delivery; each further retry waits twice as long."""
    WEBHOOK_RETRY_MAX_S: float = Field(default=900, gt=0)
    """The longest wait between two attempts of one delivery."""
    WEBHOOK_RETRY_FOR_S: float = Field(default=86_400, gt=0)
    """How long a delivery is retried after its event happened before it is recorded as failed."""

    EVENTS_PING_INTERVAL: float = Field(default=15, gt=0)
    """Seconds between heartbeat comments on ``/v3/sessions/{id}/events``, so proxies keep the stream open."""
    EVENTS_MAX_STREAMS_PER_SESSION: int = Field(default=20, ge=1)
    """Open ``/events`` streams one session may have at once; one more is a 429 (spec §25.1)."""
    EVENTS_MAX_STREAMS: int = Field(default=200, ge=1)
    """Open ``/events`` streams of all sessions together; one more is a 429 (spec §25.1)."""
    MAX_QUEUED: int = Field(default=1000, ge=0)
    """Agent runs and raw browsers that may wait for a display slot at once; one more is a 429 (spec §25.1)."""
    CDP_MAX_CONNECTIONS_PER_BROWSER: int = Field(default=16, ge=1, le=1000)
    """CDP WebSockets one raw browser may have open at once (each may hold frames for its client); one more is
    refused with a 429. Playwright and Puppeteer use one per client."""
    CDP_MAX_FRAME_FROM_BROWSER_MB: int = Field(default=128, ge=1, le=1024)
    """Largest CDP message, in MiB, passed from Chromium to a client; a larger one closes that connection (1009).
    Generous: full-page screenshots, DOM snapshots and response bodies are single messages of tens of MiB
    (Puppeteer's own ceiling is 256). A connection holds at most a few such frames, never an unbounded queue."""
    CDP_MAX_FRAME_FROM_CLIENT_MB: int = Field(default=64, ge=1, le=256)
    """Largest CDP message, in MiB, a client may send (commands are small; a bundled script for
    ``Runtime.evaluate`` or HTML to inject reach tens of MiB); a larger one closes that connection (1009) and no
    other. Half the other direction's: the server holds one client message at a time."""
    LIVE_VIEW_MAX_CONNECTIONS: int = Field(default=8, ge=1, le=1000)
    """Live-view (VNC) WebSockets one session or raw browser may have open at once; one more is refused with a
    429."""
    BROWSER_TOKEN_TTL_S: int = Field(default=900, ge=1, le=86_400)
    """Seconds a raw browser's CDP token opens new connections (spec §21.4); connections already open stay."""

    @field_validator("WEBHOOK_URL")
    @classmethod
    def _webhook_url(cls, value: str | None) -> str | None:
        problem = webhook_url_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("LOG_LEVEL", mode="before")
    @classmethod
    def _upper_log_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _slots_fit(self) -> Settings:
        if self.SLOT_BASE_INDEX + self.MAX_CONCURRENT_SESSIONS - 1 > LAST_SLOT_INDEX:
            raise ValueError(
                f"SLOT_BASE_INDEX + MAX_CONCURRENT_SESSIONS must not exceed {LAST_SLOT_INDEX + 1} display slots"
            )
        return self

    @model_validator(mode="after")
    def _refuse_open_public_bind(self) -> Settings:
        if not is_loopback(self.HOST) and not self.API_KEY and not self.ALLOW_INSECURE_NO_AUTH:
            raise ValueError(
                f"HOST={self.HOST} is not a loopback address, so API_KEY must be set "
                "(or ALLOW_INSECURE_NO_AUTH=1 to serve without auth, for development only)"
            )
        return self

    @model_validator(mode="after")
    def _refuse_keyless_proxy(self) -> Settings:
        """``ALLOWED_HOSTS``, ``CORS_ORIGINS`` and ``FORWARDED_ALLOW_IPS`` say the server is reached through a proxy or
        from other origins: a loopback ``HOST`` then protects nothing, so the key is required as on a public bind."""
        if self.API_KEY or self.ALLOW_INSECURE_NO_AUTH:
            return self
        if "*" in self.allowed_hosts:
            raise ValueError(
                "ALLOWED_HOSTS=* accepts any Host header, so API_KEY must be set "
                "(or ALLOW_INSECURE_NO_AUTH=1 to serve without auth, for development only)"
            )
        named = [name for name in PROXY_SETTINGS if getattr(self, name)]
        if named:
            raise ValueError(
                f"{' and '.join(named)} {'says' if len(named) == 1 else 'say'} the server is reached through a proxy "
                "or from other origins, so API_KEY must be set "
                "(or ALLOW_INSECURE_NO_AUTH=1 to serve without auth, for development only)"
            )
        return self

    @model_validator(mode="after")
    def _dashboard_password_is_its_own(self) -> Settings:
        if self.DASHBOARD_PASSWORD and self.API_KEY and constant_time_same(self.DASHBOARD_PASSWORD, self.API_KEY):
            raise ValueError("DASHBOARD_PASSWORD must differ from API_KEY: the dashboard has a secret of its own")
        if self.auth_enabled and not self.DASHBOARD_PASSWORD and not is_loopback(self.HOST):
            raise ValueError(
                f"HOST={self.HOST} is not a loopback address and API_KEY is set, so DASHBOARD_PASSWORD must be set "
                "too: the dashboard has its own password and never takes the API key as one"
            )
        return self

    @classmethod
    def load(cls, **overrides: object) -> Settings:
        """Build settings from the environment and ``$OPENBROWSE_HOME/.env``; raise ConfigError if invalid."""
        home = default_home()
        try:
            return cls(_env_file=home / ".env", **overrides)  # type: ignore[arg-type]
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}" for err in exc.errors()
            )
            raise ConfigError(f"Invalid configuration: {problems}") from exc

    # Derived values -------------------------------------------------------------------------------------------
    @property
    def data_dir(self) -> Path:
        return (self.OPENBROWSE_DATA_DIR or self.OPENBROWSE_HOME / "data").expanduser()

    @property
    def db_path(self) -> Path:
        return self.data_dir / "browser_use.db"

    @property
    def profiles_dir(self) -> Path:
        return self.data_dir / "profiles"

    @property
    def files_dir(self) -> Path:
        return (self.OPENBROWSE_FILES_DIR or self.data_dir).expanduser()

    @property
    def sessions_dir(self) -> Path:
        return self.files_dir / "sessions"

    @property
    def browsers_dir(self) -> Path:
        """Raw browsers' file areas."""
        return self.files_dir / "browsers"

    @property
    def workspaces_dir(self) -> Path:
        """Workspaces' files (spec §27.1), one folder per workspace id."""
        return self.files_dir / "workspaces"

    @property
    def run_dir(self) -> Path:
        """Per-instance runtime files: the child-process ledger and slot user-data dirs."""
        return self.data_dir / "run"

    def script_uid(self, index: int) -> int:
        """The uid of slot ``index``'s script host: never a slot's own uid (see :data:`SCRIPT_UID_OFFSET`)."""
        return self.SANDBOX_UID_BASE + SCRIPT_UID_OFFSET + index

    @property
    def node(self) -> tuple[str, str]:
        """This node's id and URL (spec §26.2)."""
        return node_identity(self.NODE_ID, self.NODE_URL, self.HOST, self.PORT)

    @property
    def auth_enabled(self) -> bool:
        return bool(self.API_KEY) and not self.ALLOW_INSECURE_NO_AUTH

    @property
    def allowed_hosts(self) -> tuple[str, ...]:
        return _comma_list(self.ALLOWED_HOSTS)

    @property
    def cors_origins(self) -> tuple[str, ...]:
        return _comma_list(self.CORS_ORIGINS)

    @property
    def codeview_url(self) -> str | None:
        """Where a session's Chromium reaches this server's code tab (spec §11.3); None on an ephemeral port."""
        if self.PORT == 0:
            return None
        host = self.HOST
        if host in ("", "0.0.0.0", "::") or (is_loopback(host) and host != "::1"):
            host = "127.0.0.1"
        elif ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.PORT}/codeview"

    @property
    def dashboard_password(self) -> str | None:
        """The dashboard's login and Basic password; None turns both off (the API key header still works)."""
        return self.DASHBOARD_PASSWORD or None

    @property
    def docs_enabled(self) -> bool:
        return self.DOCS_ENABLED if self.DOCS_ENABLED is not None else is_loopback(self.HOST)

    @property
    def openai_api_style(self) -> Literal["responses", "chat"]:
        if self.OPENAI_API_STYLE:
            return self.OPENAI_API_STYLE
        return "chat" if self.OPENAI_BASE_URL else "responses"
