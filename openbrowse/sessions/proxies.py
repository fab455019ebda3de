"""Which upstream proxy a session or raw browser uses (spec §28.1), how its row keeps it, and what it costs.

A request names ``customProxy`` (its own proxy), ``proxyCountryCode`` (an entry of the operator's ``PROXY_POOL``;
``null`` means direct), or neither (``PROXY_DEFAULT_COUNTRY`` if set, else direct). The stored form is
``{"country": "us"}`` for a pool entry (the credentials stay in the settings) or the custom proxy's fields with its
credentials, which the session's row holds only while the session lives and the redactor hides everywhere.
A stored proxy that cannot be rebuilt (a country no longer in the pool, wiped credentials) is an error: a run
never goes out directly instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from cdp_use.client import CDPClient

from openbrowse.config import Settings
from openbrowse.domain.redaction import REDACTORS
from openbrowse.domain.sessions import SessionRecord
from openbrowse.errors import BrowserUnavailable, ConfigError, InvalidRequest, ProxyUnavailable
from openbrowse.network.proxy_route import ProxyRoute
from openbrowse.network.upstream import UpstreamProxy, parse_pool, proxy_from_fields
from openbrowse.sessions.requests import SessionCreate

__all__ = ["ProxyChooser", "proxy_cost_usd", "proxy_used_mb", "public_proxy", "wipe_credentials"]

logger = logging.getLogger(__name__)

POOL_REDACTOR_KEY = "proxy-pool"
CERT_CALL_TIMEOUT = 15.0
BYTES_PER_GB = Decimal(10**9)
_CUSTOM_FIELDS = {"host", "port", "username", "password", "ignoreCertErrors", "scheme"}


class ProxyChooser:
    """The operator's pool, validated once at start (a bad ``PROXY_POOL`` is a :class:`ConfigError`)."""

    def __init__(self, settings: Settings) -> None:
        try:
            self.pool = parse_pool(settings.PROXY_POOL)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        default = (settings.PROXY_DEFAULT_COUNTRY or "").strip().lower() or None
        if default is not None and default not in self.pool:
            raise ConfigError(f"PROXY_DEFAULT_COUNTRY={default} is not a country in PROXY_POOL.")
        self.default_country = default

    def hold_pool_secrets(self) -> None:
        """The log hides every holder's secret values, the pool's credentials among them (once, at start)."""
        values: dict[str, str] = {}
        for proxy in self.pool.values():
            values.update(proxy.secret_values())
        if values:
            REDACTORS.add(POOL_REDACTOR_KEY, values)

    def for_request(self, request: SessionCreate) -> dict[str, Any] | None:
        return self.choose(
            request.custom_proxy,
            request.proxy_country_code,
            custom_sent=request.sent("custom_proxy"),
            country_sent=request.sent("proxy_country_code"),
        )

    def choose(
        self, custom: object, country: object, *, custom_sent: bool, country_sent: bool
    ) -> dict[str, Any] | None:
        """The stored form for a new session or browser; InvalidRequest / ProxyUnavailable with one sentence."""
        if custom_sent and custom is not None:
            if country_sent and country is not None:
                raise InvalidRequest("Send either customProxy or proxyCountryCode, not both.")
            return custom_proxy(custom).stored()
        if country_sent:
            return None if country is None else {"country": self.country(country)}
        return {"country": self.default_country} if self.default_country else None

    def country(self, code: object) -> str:
        if not isinstance(code, str) or not code.strip():
            raise InvalidRequest("proxyCountryCode must be a country code such as 'us', or null for no proxy.")
        key = code.strip().lower()
        if key not in self.pool:
            available = ", ".join(sorted(self.pool)) or "none"
            raise ProxyUnavailable(
                f"No proxy for country '{code[:16]}' in this server's PROXY_POOL (available: {available})."
            )
        return key

    def proxy(self, stored: Mapping[str, Any] | None) -> UpstreamProxy | None:
        """The proxy a stored form names (None: direct); InvalidRequest when it can no longer be honoured."""
        if stored is None:
            return None
        country = stored.get("country")
        if country is not None:
            proxy = self.pool.get(str(country))
            if proxy is None:
                raise ProxyUnavailable(f"The proxy country '{country}' is no longer in this server's PROXY_POOL.")
            return proxy
        proxy = UpstreamProxy.from_stored(dict(stored))
        if proxy is None:
            raise InvalidRequest("This session's proxy credentials were wiped when it ended; start a new session.")
        return proxy

    def route(self, owner_id: str, stored: Mapping[str, Any] | None) -> ProxyRoute | None:
        """A fresh route for the owner's slot, its credentials held by the redactor for the owner's sinks."""
        proxy = self.proxy(stored)
        if proxy is None:
            return None
        if values := proxy.secret_values():
            REDACTORS.add(owner_id, values)
        return ProxyRoute(proxy)


class ProxyMeter:
    """A run's proxy spend (spec §28.1): the row's bytes from earlier runs plus this run's route."""

    def __init__(self, settings: Settings, record: SessionRecord) -> None:
        self.route = ProxyChooser(settings).route(record.id, record.proxy)
        self._settings = settings
        self._earlier = record.proxy_bytes

    @property
    def upstream(self) -> UpstreamProxy | None:
        return self.route.proxy if self.route is not None else None

    @property
    def bytes(self) -> int:
        return self._earlier + (self.route.bytes if self.route is not None else 0)

    def usd(self) -> Decimal:
        return proxy_cost_usd(self._settings, self.bytes)

    def changes(self) -> dict[str, Any]:
        """The row fields to write with the costs (nothing without a proxy)."""
        return {"proxy_bytes": self.bytes, "proxy_cost_usd": self.usd()} if self.route is not None else {}


def put_route_on(holder: object, route: ProxyRoute | None) -> None:
    """Send the slot's traffic (a lease's slot, or a slot) through ``route``. A holder without a confinement (a
    test double) takes no route; asked to take one, it refuses rather than let traffic go out directly."""
    slot = getattr(holder, "slot", holder)
    confinement = getattr(slot, "confinement", None)
    if confinement is not None:
        confinement.use_route(route)
    elif route is not None:
        raise BrowserUnavailable("This browser cannot use an upstream proxy.")


def browser_route(browser_id: str, proxy: UpstreamProxy | None) -> ProxyRoute | None:
    """A raw browser's route; its credentials are hidden from the log while it lives (:func:`forget_route`)."""
    if proxy is None:
        return None
    if values := proxy.secret_values():
        REDACTORS.add(browser_id, values)
    return ProxyRoute(proxy)


def forget_route(owner_id: str) -> None:
    REDACTORS.drop(owner_id)


class ProxyCertificates:
    """With ``ignoreCertErrors``, the browser accepts the certificates its proxy's TLS interception presents (spec
    §28.1): ``Security.setIgnoreCertificateErrors`` on a DevTools connection of our own to that one Chromium (each
    slot runs its own), kept open while the browser lives, since Chromium drops the override with the connection
    that set it. No launch flag, so a warm spare serves such a browser too."""

    def __init__(self) -> None:
        self._client: CDPClient | None = None

    async def accept(self, cdp_ws_url: str, proxy: UpstreamProxy | None) -> None:
        if proxy is None or not proxy.ignore_cert_errors or self._client is not None:
            return
        client = CDPClient(cdp_ws_url)
        try:
            async with asyncio.timeout(CERT_CALL_TIMEOUT):
                await client.start()  # type: ignore[no-untyped-call]
                await client.send_raw("Security.setIgnoreCertificateErrors", {"ignore": True})
        except Exception as exc:
            await self._stop(client)
            raise BrowserUnavailable("The browser could not be set to accept the proxy's certificates.") from exc
        self._client = client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await self._stop(client)

    @staticmethod
    async def _stop(client: CDPClient) -> None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(CERT_CALL_TIMEOUT):
                await client.stop()  # type: ignore[no-untyped-call]


def engine_route(engine: object) -> ProxyRoute | None:
    meter = getattr(engine, "proxy", None)
    return meter.route if isinstance(meter, ProxyMeter) else None


def custom_proxy(raw: object) -> UpstreamProxy:
    if not isinstance(raw, Mapping):
        raise InvalidRequest("customProxy must be an object with host and port.")
    unknown = set(raw) - _CUSTOM_FIELDS
    if unknown:
        raise InvalidRequest(f"customProxy has an unknown field: {sorted(unknown)[0][:40]}.")
    return proxy_from_fields(
        raw.get("host"),
        raw.get("port"),
        username=raw.get("username"),
        password=raw.get("password"),
        scheme=raw.get("scheme") or "http",
        ignore_cert_errors=raw.get("ignoreCertErrors", False) or False,
    )


def has_credentials(stored: Mapping[str, Any] | None) -> bool:
    return stored is not None and (stored.get("username") is not None or stored.get("password") is not None)


def public_proxy(stored: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, str | None]:
    """``(customProxy, proxyCountryCode)`` as ``GET`` shows them: never a credential."""
    if stored is None:
        return None, None
    if stored.get("country") is not None:
        return None, str(stored["country"])
    public = {key: stored.get(key) for key in ("host", "port", "scheme", "hasUsername")}
    return public, None


def browser_form(stored: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What a raw browser's row keeps: the public form only (the browser itself lives in memory)."""
    if stored is None:
        return None
    custom, country = public_proxy(stored)
    return {"country": country} if country is not None else custom


def wipe_credentials(stored: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The stored form once its owner has ended for good: where it went, not how it logged in."""
    if stored is None or stored.get("country") is not None:
        return dict(stored) if stored is not None else None
    return {key: value for key, value in stored.items() if key not in {"username", "password"}}


def proxy_cost_usd(settings: Settings, byte_count: int) -> Decimal:
    return (Decimal(byte_count) / BYTES_PER_GB * Decimal(str(settings.PROXY_COST_PER_GB))).quantize(Decimal("1e-8"))


def proxy_used_mb(byte_count: int) -> str:
    """Megabytes (10^6 bytes) as a decimal string, three decimals at most, ``"0"`` for none."""
    text = f"{byte_count / 1_000_000:.3f}".rstrip("0").rstrip(".")
    return text or "0"
