"""The shared browser's lifecycle (seed chrome-backend, spec §23.3) with a fake launcher: no browser, only the rules."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from openbrowse.mcpbrowser.backend import BrowserToolsBackend
from openbrowse.mcpbrowser.handles import ContextHandles
from openbrowse.mcpbrowser.pages import ToolFailure
from openbrowse.mcpbrowser.raw import RawBrowsers, RawTarget
from openbrowse.mcpbrowser.shared import BackendClosed, SharedBrowser


@dataclass(eq=False)
class FakeContext:
    owner: str
    closed: bool = False

    async def aclose(self) -> None:
        self.closed = True


@dataclass(eq=False)
class FakeBrowser:
    number: int
    fail_contexts: int = 0
    alive: bool = True
    closed: bool = False
    contexts: list[FakeContext] = field(default_factory=list)

    async def open_owner(self, owner: str) -> FakeContext:
        await asyncio.sleep(0)
        if self.fail_contexts:
            self.fail_contexts -= 1
            raise RuntimeError("context creation failed")
        context = FakeContext(owner)
        self.contexts.append(context)
        return context

    async def aclose(self) -> None:
        self.closed = True


@dataclass
class FakeLauncher:
    failures: int = 0
    fail_contexts: int = 0
    launched: list[FakeBrowser] = field(default_factory=list)
    gate: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self) -> FakeBrowser:
        await self.gate.wait()
        if self.failures:
            self.failures -= 1
            raise RuntimeError("launch failed")
        browser = FakeBrowser(len(self.launched) + 1, fail_contexts=self.fail_contexts)
        self.launched.append(browser)
        return browser


def backend(launcher: FakeLauncher, idle_s: float = 300) -> SharedBrowser[FakeContext]:
    launcher.gate.set()
    return SharedBrowser(launcher, idle_s=idle_s)


async def test_concurrent_first_calls_share_one_launch_and_each_owner_gets_one_context() -> None:
    launcher = FakeLauncher()
    shared: SharedBrowser[FakeContext] = SharedBrowser(launcher, idle_s=300)
    calls = [asyncio.ensure_future(shared.owner(owner)) for owner in ("a", "b", "a", "c", "b")]
    await asyncio.sleep(0)
    launcher.gate.set()
    contexts = await asyncio.gather(*calls)
    assert len(launcher.launched) == 1
    assert [context.owner for context in contexts] == ["a", "b", "a", "c", "b"]
    assert contexts[0] is contexts[2] and contexts[1] is contexts[4]
    assert len(launcher.launched[0].contexts) == 3
    await shared.aclose()


async def test_releasing_an_owner_closes_only_its_context() -> None:
    shared = backend(FakeLauncher())
    a, b = await shared.owner("a"), await shared.owner("b")
    await shared.release("a")
    assert a.closed and not b.closed
    assert shared.owners == ["b"]
    assert await shared.owner("b") is b
    fresh = await shared.owner("a")
    assert fresh is not a and not fresh.closed
    await shared.release("nobody")  # harmless
    await shared.aclose()


async def test_a_failed_launch_is_forgotten_and_the_next_call_launches_again() -> None:
    launcher = FakeLauncher(failures=1)
    shared = backend(launcher)
    with pytest.raises(RuntimeError, match="launch failed"):
        await shared.owner("a")
    assert shared.browser is None and shared.owners == []
    context = await shared.owner("a")
    assert len(launcher.launched) == 1 and context.owner == "a"
    assert shared.launches == 2
    await shared.aclose()


async def test_a_failed_context_creation_is_forgotten_and_the_next_call_retries() -> None:
    launcher = FakeLauncher(fail_contexts=1)
    shared = backend(launcher)
    with pytest.raises(RuntimeError, match="context creation failed"):
        await shared.owner("a")
    assert shared.owners == []
    context = await shared.owner("a")
    assert context.owner == "a" and len(launcher.launched) == 1
    await shared.aclose()


async def test_a_closed_backend_refuses_calls_and_closing_twice_is_harmless() -> None:
    launcher = FakeLauncher()
    shared = backend(launcher)
    context = await shared.owner("a")
    await shared.aclose()
    assert context.closed and launcher.launched[0].closed
    with pytest.raises(BackendClosed):
        await shared.owner("a")
    await shared.aclose()


async def test_a_dead_browser_is_retired_with_its_owners_and_the_next_call_relaunches() -> None:
    launcher = FakeLauncher()
    shared = backend(launcher)
    old = await shared.owner("a")
    launcher.launched[0].alive = False
    new = await shared.owner("a")
    assert len(launcher.launched) == 2 and new is not old
    assert launcher.launched[0].closed and old.closed
    assert not launcher.launched[1].closed
    await shared.aclose()


async def test_without_owners_the_browser_stops_after_the_idle_time_and_starts_again_on_use() -> None:
    launcher = FakeLauncher()
    shared = backend(launcher, idle_s=0.05)
    await shared.owner("a")
    await asyncio.sleep(0.1)
    assert shared.browser is not None  # an owner holds it
    await shared.release("a")
    while shared.browser is not None:
        await asyncio.sleep(0.01)
    await shared.owner("b")
    assert len(launcher.launched) == 2
    assert launcher.launched[0].closed
    await shared.aclose()


async def test_a_caller_cancelled_during_the_launch_does_not_cancel_it_for_the_others() -> None:
    launcher = FakeLauncher()
    shared: SharedBrowser[FakeContext] = SharedBrowser(launcher, idle_s=300)
    first = asyncio.ensure_future(shared.owner("a"))
    second = asyncio.ensure_future(shared.owner("b"))
    await asyncio.sleep(0)
    first.cancel()
    launcher.gate.set()
    assert (await second).owner == "b"
    with pytest.raises(asyncio.CancelledError):
        await first
    assert len(launcher.launched) == 1
    await shared.aclose()


async def test_the_sweep_releases_owners_whose_mcp_session_is_gone() -> None:
    async def no_raw(browser_id: str) -> RawTarget:
        raise AssertionError(browser_id)

    launcher = FakeLauncher()
    raw = RawBrowsers(no_raw, rules=None, evaluate_enabled=True)
    tools = BrowserToolsBackend(backend(launcher), raw, ContextHandles(60))  # type: ignore[arg-type]
    await tools.shared.owner("kept")
    await tools.shared.owner("gone")
    kept, gone = launcher.launched[0].contexts
    assert await tools.sweep() == []  # nobody says which sessions exist yet: nothing is released
    tools.live_owners = lambda: ["kept", "another"]
    assert await tools.sweep() == ["gone"]
    assert gone.closed and not kept.closed and tools.shared.owners == ["kept"]
    await tools.aclose()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def no_raw_browser(browser_id: str) -> RawTarget:
    raise AssertionError(browser_id)


async def test_a_handle_is_an_owner_with_the_seeds_lifecycle() -> None:
    launcher, clock = FakeLauncher(), Clock()
    handles = ContextHandles(60, clock=clock)
    raw = RawBrowsers(no_raw_browser, rules=None, evaluate_enabled=True)
    tools = BrowserToolsBackend(backend(launcher), raw, handles)  # type: ignore[arg-type]
    tools.live_owners = lambda: ["session-1"]
    closed, expiring, kept = tools.open_context(), tools.open_context(), tools.open_context()
    owners: dict[str, str] = {}
    for handle in (closed, expiring, kept):
        with handles.use(handle) as owner:  # concurrent first calls of one handle share its context's creation
            first, again = await asyncio.gather(tools.shared.owner(owner), tools.shared.owner(owner))
            assert first is again
            owners[handle] = owner
    await tools.shared.owner("session-1")
    assert len(launcher.launched) == 1 and len(launcher.launched[0].contexts) == 4

    await tools.close_context(closed)  # closes only that handle's context
    assert [c.closed for c in launcher.launched[0].contexts] == [True, False, False, False]
    with pytest.raises(ToolFailure, match="was closed"):
        await tools.close_context(closed)

    clock.now += 50
    with handles.use(kept):
        pass
    clock.now += 20  # ``expiring`` idle for 70 s, ``kept`` for 20 s
    assert await tools.sweep() == [owners[expiring]]
    assert [c.closed for c in launcher.launched[0].contexts] == [True, True, False, False]
    assert sorted(tools.shared.owners) == sorted([owners[kept], "session-1"])
    await tools.aclose()


async def test_a_stateless_call_without_a_context_is_refused_before_any_launch() -> None:
    launcher = FakeLauncher()
    raw = RawBrowsers(no_raw_browser, rules=None, evaluate_enabled=True)
    tools = BrowserToolsBackend(backend(launcher), raw, ContextHandles(60))  # type: ignore[arg-type]
    with pytest.raises(ToolFailure, match="open_browser_context"):
        await tools.run("list_pages", None, {})
    with pytest.raises(ToolFailure, match="no browser context"):
        await tools.run("list_pages", None, {"contextId": "ctx_unknown"})
    assert launcher.launched == []
    await tools.aclose()
