"""The real servers the end-to-end tests run against, and the clients that talk to them.

* ``start_isolated_server``: a real server on a display-slot range nothing else on the machine uses;
* ``running_server``: the same, stopped afterwards with nothing it started left running (the body of every
  module-scoped ``server`` fixture);
* ``agent_env``: the environment of a server whose models are the fake provider's;
* ``api_client``: an HTTP client of a server that sends the server's own API key, if it has one;
* ``raw_browser``: a raw browser (``POST /v3/browsers``), stopped afterwards.

The fixtures built on these (``http``, ``browser``, ``pages``) are in ``conftest.py``; each test module keeps its own
``server`` fixture, since that is where the modules differ (slots, API key, settings).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from tests.e2e.browser_support import create_browser, stop_browser
from tests.support.server import ServerProcess
from tests.support.slot_range import free_slot_base

if TYPE_CHECKING:
    from tests.fakes.llm_server import FakeProvider


def start_isolated_server(
    home: Path, env: Mapping[str, str] | None = None, *, slots: int = 1, open_files: int | None = None
) -> ServerProcess:
    """A server with settings ``env`` on ``slots`` display slots of its own. With an ``API_KEY`` it trusts 127.0.0.1
    as a proxy, so the addresses of ``browser_support.forwarded_for`` count (a keyless server counts no failures,
    and may not name a proxy: ``FORWARDED_ALLOW_IPS`` requires the key). ``open_files``: its soft limit of open
    files."""
    proxy = {"FORWARDED_ALLOW_IPS": "127.0.0.1"} if env and "API_KEY" in env else {}
    settings = {"MAX_CONCURRENT_SESSIONS": str(slots), **proxy, **(env or {})}
    # one index more: the shared browser of the MCP tools takes the slot after the sessions' (spec §23.3)
    slot_base = free_slot_base(slots + 1)
    return ServerProcess(home=home, env=settings, slot_base=slot_base, open_files=open_files).start()


@contextmanager
def running_server(
    home: Path,
    env: Mapping[str, str] | None = None,
    *,
    slots: int = 1,
    check_temp: bool = False,
    open_files: int | None = None,
) -> Iterator[ServerProcess]:
    """:func:`start_isolated_server`, stopped on exit; then none of its processes (and, with ``check_temp``, none of
    its temporary files) may be left."""
    process = start_isolated_server(home, env, slots=slots, open_files=open_files)
    try:
        yield process
    finally:
        process.stop()
    assert not process.leftovers(), process.leftovers()
    if check_temp:
        assert not process.temp_leftovers(), process.temp_leftovers()


def agent_env(fake: FakeProvider, **extra: str) -> dict[str, str]:
    """The fake provider's URLs and keys, with OpenAI models on the Responses API, plus ``extra`` settings."""
    return {**fake.env(), "OPENAI_API_STYLE": "responses", **extra}


@contextmanager
def api_client(server: ServerProcess, timeout: float = 60) -> Iterator[httpx.Client]:
    """An HTTP client of ``server`` that sends its ``API_KEY`` (none when the server has no key)."""
    api_key = server.env.get("API_KEY")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(base_url=server.base_url, headers=headers, timeout=timeout) as client:
        yield client


@contextmanager
def raw_browser(http: httpx.Client) -> Iterator[dict[str, Any]]:
    """A raw browser of the server ``http`` talks to; stopped on exit."""
    created = create_browser(http)
    try:
        yield created
    finally:
        stop_browser(http, created["id"])
