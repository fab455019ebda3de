"""One server-side HTTP request under the network policy: every hop checked, every connection pinned.

The client never follows redirects or resolves names itself: each hop is parsed and resolved by
:mod:`openbrowse.network.policy`, and the connection goes to the very address that was checked (the name rides
in the ``Host`` header and TLS SNI), so a DNS answer that changes between check and connect cannot slip through.
Used by ``http_fetch`` and, later, the sandbox's ``fetch()``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from urllib.parse import urljoin

import httpx

from openbrowse.agent.proxied_transport import proxied_client
from openbrowse.network.policy import IPAddress, NetworkRefused, NetworkRules, Target, url_for
from openbrowse.network.proxy_route import ProxyFailed, ProxyRoute

FETCH_TIMEOUT = 30.0
MAX_REDIRECTS = 10
MAX_BODY_BYTES = 20 * 1024 * 1024
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140 Safari/537.36"
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})


class FetchFailed(Exception):
    """The request could not be completed (timeout, connection error, too many redirects)."""


@dataclass(frozen=True, slots=True)
class FetchedResponse:
    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    truncated: bool = False
    redirects: list[str] = field(default_factory=list)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    def text(self) -> str:
        charset = "utf-8"
        for part in self.headers.get("content-type", "").split(";")[1:]:
            key, _, value = part.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip("\"'")
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


async def fetch(
    rules: NetworkRules,
    url: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: str | bytes | None = None,
    timeout: float = FETCH_TIMEOUT,  # noqa: ASYNC109 - one budget across every redirect hop
    route: ProxyRoute | None = None,
) -> FetchedResponse:
    """Send one request (following up to ten redirects, each re-checked); raise NetworkRefused or FetchFailed.

    With ``route`` (the owner's upstream proxy, spec §28.1) every hop goes through it, and a failing proxy is a
    FetchFailed naming it: never a direct request instead."""
    try:
        async with asyncio.timeout(timeout):
            return await _follow(rules, url, method.upper(), dict(headers or {}), body, route)
    except ProxyFailed as exc:
        raise FetchFailed(str(exc)) from None
    except TimeoutError as exc:
        raise FetchFailed(f"The request to {url[:200]} took longer than {timeout:.0f} s and was abandoned.") from exc


async def _follow(
    rules: NetworkRules,
    url: str,
    method: str,
    headers: dict[str, str],
    body: str | bytes | None,
    route: ProxyRoute | None,
) -> FetchedResponse:
    redirects: list[str] = []
    current = url
    previous_host: str | None = None
    if route is None:
        client = httpx.AsyncClient(follow_redirects=False, trust_env=False)
    else:
        client = proxied_client(route, rules)
    async with client:
        for _ in range(MAX_REDIRECTS + 1):
            target, addresses = await rules.check(current)
            if previous_host is not None and target.host != previous_host:
                headers = {k: v for k, v in headers.items() if k.lower() not in _CREDENTIAL_HEADERS}
            previous_host = target.host
            status, response_headers, content, truncated = await _send(client, target, addresses, method, headers, body)
            location = response_headers.get("location")
            if status in _REDIRECTS and location:
                redirects.append(current)
                current = urljoin(current, location)
                if status == 303 or (status in {301, 302} and method == "POST"):
                    method, body = "GET", None
                continue
            return FetchedResponse(current, status, response_headers, content, truncated, redirects)
    raise FetchFailed(f"More than {MAX_REDIRECTS} redirects starting at {url[:200]}.")


async def _send(
    client: httpx.AsyncClient,
    target: Target,
    addresses: list[IPAddress],
    method: str,
    headers: dict[str, str],
    body: str | bytes | None,
) -> tuple[int, dict[str, str], bytes, bool]:
    """Try each checked address in turn until one accepts the connection."""
    last_error: Exception | None = None
    for address in addresses:
        request = client.build_request(
            method,
            url_for(target, address),
            headers={"user-agent": USER_AGENT, **headers, "host": target.authority},
            content=body,
            extensions={"sni_hostname": target.host},
        )
        try:
            response = await client.send(request, stream=True)
        except httpx.ConnectError as exc:
            last_error = exc
            continue
        except httpx.HTTPError as exc:
            raise FetchFailed(f"The request to {target.host} failed: {exc or type(exc).__name__}.") from exc
        try:
            content, truncated = await _read_capped(response)
        except httpx.HTTPError as exc:
            raise FetchFailed(f"Reading the response from {target.host} failed: {exc}.") from exc
        finally:
            await response.aclose()
        return response.status_code, {k.lower(): v for k, v in response.headers.items()}, content, truncated
    raise FetchFailed(f"Could not connect to {target.host}: {last_error}.")


async def _read_capped(response: httpx.Response) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= MAX_BODY_BYTES:
            return b"".join(chunks)[:MAX_BODY_BYTES], True
    return b"".join(chunks), False


__all__ = ["FETCH_TIMEOUT", "FetchFailed", "FetchedResponse", "NetworkRefused", "fetch"]
