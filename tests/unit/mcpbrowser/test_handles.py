"""Browser-context handles (spec §23.3): minted, used, closed, expired when idle (never during a call)."""

from __future__ import annotations

import pytest

from openbrowse.mcpbrowser.handles import ContextHandles, owner_of_handle
from openbrowse.mcpbrowser.pages import ToolFailure


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_handle_names_an_owner_that_does_not_give_it_away() -> None:
    handles = ContextHandles(60)
    first, second = handles.open(), handles.open()
    assert first != second and first.startswith("ctx_") and len(first) > 30
    with handles.use(first) as owner:
        assert owner == owner_of_handle(first) and first not in owner
    assert sorted(handles.live_owners()) == sorted([owner_of_handle(first), owner_of_handle(second)])


def test_an_idle_handle_expires_and_a_later_call_is_told_so() -> None:
    clock = Clock()
    handles = ContextHandles(60, clock=clock)
    idle, used = handles.open(), handles.open()
    clock.now += 50
    with handles.use(used):
        pass
    clock.now += 20  # idle: 70 s unused; used: 20 s since its call ended
    assert handles.live_owners() == [owner_of_handle(used)]
    with pytest.raises(ToolFailure, match="expired after 1 minutes without a call"), handles.use(idle):
        pass
    with pytest.raises(ToolFailure, match="no browser context"), handles.use("ctx_unknown"):
        pass


def test_a_handle_does_not_expire_during_a_long_call() -> None:
    clock = Clock()
    handles = ContextHandles(10, clock=clock)
    handle = handles.open()
    with handles.use(handle):
        clock.now += 100  # a call longer than the idle time
        assert handles.live_owners() == [owner_of_handle(handle)]
    clock.now += 5
    assert handles.live_owners() == [owner_of_handle(handle)]  # the idle time counts from the call's end
    clock.now += 6
    assert handles.live_owners() == []


def test_a_closed_handle_is_refused_and_cannot_be_closed_twice() -> None:
    handles = ContextHandles(60)
    handle = handles.open()
    assert handles.close(handle) == owner_of_handle(handle)
    assert handles.live_owners() == [] and len(handles) == 0
    with pytest.raises(ToolFailure, match="was closed"):
        handles.close(handle)
    with pytest.raises(ToolFailure, match="was closed"), handles.use(handle):
        pass
