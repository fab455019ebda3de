"""The real servers the end-to-end tests run against, and the clients that talk to them.

* ``start_isolated_server``: a real server on a display-slot range nothing else on the machine uses;
* ``running_server``: the same, stopped afterwards with nothing it started left running (the body of every
  module-scoped ``server`` fixture);
* ``agent_env``: the environment of a server whose models are the fake provider's;
* ``api_client``: an HTTP client of a server that sends the server's own API key, if it has one;
* ``raw_browser``: a raw browser (``POST /v3/browsers``), stopped afterwards.

* ``server_fixture``: a test module's ``server`` fixture, made from the settings it differs in (slots, API key, ...);
  with ``shared`` the server is one per test process for every module that asks for the same settings
  (:class:`SharedServers`), and each module leaves nothing open on it (:func:`end_open_work`).

The fixtures built on these (``http``, ``browser``, ``pages``) are in ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.e2e.agent_support import TERMINAL
from tests.e2e.browser_support import create_browser, stop_browser
from tests.support.server import ServerProcess, outlives_modules
from tests.support.slot_range import free_slot_base
from tests.support.waiting import wait_for

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


ServerSettings = Mapping[str, str] | Callable[["FakeProvider"], Mapping[str, str]]

SHARED_API_KEY = "e2e-shared-api-key-0123456789abcdef"
"""The API key of the modules that share a server (a shared server has one key for all of them)."""

ENDED = TERMINAL - {"idle"}


class SharedServers:
    """The servers of one test process that modules share, one per distinct settings; stopped at the end of the
    process with nothing left running (and, with ``check_temp``, nothing left in their temp dirs)."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._tmp = tmp_path_factory
        self._servers: dict[tuple[tuple[tuple[str, str], ...], int, bool], ServerProcess] = {}

    def get(self, env: Mapping[str, str], *, slots: int, check_temp: bool) -> ServerProcess:
        key = (tuple(sorted(env.items())), slots, check_temp)
        server = self._servers.get(key)
        if server is None:
            server = outlives_modules(start_isolated_server(self._tmp.mktemp("shared-home"), env, slots=slots))
            self._servers[key] = server
        assert server.process is not None and server.process.poll() is None, (
            f"a shared server exited:\n{server.log()[-3000:]}"
        )
        return server

    def stop_all(self) -> None:
        problems = []
        for (_, _, check_temp), server in self._servers.items():
            server.stop()
            problems += [f"{server.port}: {p.name()} left running" for p in server.leftovers()]
            if check_temp:
                problems += [f"{server.port}: {name} left" for name in server.temp_leftovers()]
        assert not problems, problems


def end_open_work(server: ServerProcess, timeout: float = 120.0) -> None:
    """Stop every raw browser still active and every session of ``server`` that has not ended (running, queued,
    paused, or parked ``idle`` with its browser), and wait until each has: the server is then as quiet as a fresh
    one for the module that uses it next."""
    with api_client(server) as http:
        active = http.get("/v3/browsers", params={"filterBy": "active", "pageSize": 100}).json()["items"]
        for browser in active:
            stop_browser(http, browser["id"])
        open_ids: list[str] = []
        page = 1
        while True:
            listed = http.get("/v3/sessions", params={"page": page, "page_size": 100}).json()
            open_ids += [s["id"] for s in listed["sessions"] if s["status"] not in ENDED]
            if page * 100 >= listed["total"]:
                break
            page += 1

        def ended(session_id: str) -> bool:
            return http.get(f"/v3/sessions/{session_id}").json()["status"] in ENDED

        for session_id in open_ids:
            if not ended(session_id):
                http.post(f"/v3/sessions/{session_id}/stop", json={"strategy": "session"})
        for session_id in open_ids:
            wait_for(partial(ended, session_id), timeout, interval=0.2, what=f"session {session_id} ended")


def server_fixture(
    settings: ServerSettings | None = None,
    *,
    slots: int = 1,
    check_temp: bool = False,
    name: str = "server",
    both_stores: bool = False,
    shared: bool = False,
) -> Any:
    """A module-scoped fixture ``name`` (``server = server_fixture(...)`` in a test module): a real server with
    ``settings``, or ``settings(fake)`` when it is a function of the module's fake provider, on ``slots`` slots of
    its own; stopped after the module, with nothing it started left running (:func:`running_server`). With
    ``both_stores`` the module runs twice, on SQLite and on the throwaway PostgreSQL (``store_env``).

    With ``shared`` the modules of one test process that ask for the same settings share one server (a start is
    several seconds): for modules whose tests need no fresh server, only one that holds nothing open of theirs
    (:func:`end_open_work` after each module); it is stopped and checked at the end of the process."""

    def start(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, store: dict[str, str]) -> Any:
        env = settings(request.getfixturevalue("fake")) if callable(settings) else settings
        home = tmp_path_factory.mktemp(f"{request.module.__name__.rsplit('.', 1)[-1]}-home")
        return running_server(home, {**(env or {}), **store}, slots=slots, check_temp=check_temp)

    if shared:
        assert not both_stores, "a module on both stores has servers of its own"

        @pytest.fixture(scope="module", name=name)
        def shared_server(request: pytest.FixtureRequest, shared_servers: SharedServers) -> Iterator[ServerProcess]:
            env = settings(request.getfixturevalue("fake")) if callable(settings) else settings
            process = shared_servers.get(env or {}, slots=slots, check_temp=check_temp)
            yield process
            end_open_work(process)

        return shared_server

    if both_stores:

        @pytest.fixture(scope="module", name=name)
        def server_on_each_store(
            request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, store_env: dict[str, str]
        ) -> Iterator[ServerProcess]:
            with start(request, tmp_path_factory, store_env) as process:
                yield process

        return server_on_each_store

    @pytest.fixture(scope="module", name=name)
    def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
        with start(request, tmp_path_factory, {}) as process:
            yield process

    return server


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
