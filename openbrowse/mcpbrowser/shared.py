"""SharedBrowser: one process-shared browser with one isolated context per owner (spec §23.3, seed chrome-backend).

The seed's lifecycle, exactly:

* Concurrent first calls share one launch (one task, awaited shielded by every caller); a failed launch is
  forgotten when it fails, so a later call launches again.
* An owner's first call creates its context (and first page); concurrent calls of one owner share that creation,
  and a failed creation is forgotten so the next call retries.
* :meth:`SharedBrowser.release` removes the owner and closes only its context.
* :meth:`SharedBrowser.aclose` marks the backend closed (further calls are refused with :class:`BackendClosed`) and
  closes every context and the browser; repeated calls are harmless.

Ours on top: a browser found dead (its Chromium killed, its sandbox over its limits) is retired with its owners'
contexts and the next call launches a fresh one; with no owners for ``idle_s`` seconds the browser is stopped and
the next call starts it again. A retired browser is closed before the next one starts (they use the same slot).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from openbrowse.errors import OpenBrowseError
from openbrowse.shielding import run_shielded

__all__ = ["BackendClosed", "Launched", "Launcher", "OwnedContext", "SharedBrowser"]

logger = logging.getLogger(__name__)


class BackendClosed(OpenBrowseError):
    """The browser tools were shut down with the server: no further call is served."""

    code = "backend_closed"

    def __init__(self, message: str = "The shared browser is closed; the server is shutting down.") -> None:
        super().__init__(message)


class OwnedContext(Protocol):
    """What an owner holds in the shared browser (its browser context and pages)."""

    async def aclose(self) -> None: ...


OwnerT = TypeVar("OwnerT", bound=OwnedContext)
OwnerT_co = TypeVar("OwnerT_co", bound=OwnedContext, covariant=True)


class Launched(Protocol[OwnerT_co]):
    """A launched shared browser."""

    @property
    def alive(self) -> bool: ...

    async def open_owner(self, owner: str) -> OwnerT_co: ...

    async def aclose(self) -> None: ...


Launcher = Callable[[], Awaitable[Launched[OwnerT]]]


@dataclass(slots=True)
class _Owner(Generic[OwnerT]):
    browser: Launched[OwnerT]
    task: asyncio.Task[OwnerT]


class SharedBrowser(Generic[OwnerT]):
    """One browser for every owner, started on first use. Use as ``async with`` or call :meth:`aclose`."""

    def __init__(self, launch: Launcher[OwnerT], *, idle_s: float) -> None:
        self._launch = launch
        self.idle_s = idle_s
        self._launching: asyncio.Task[Launched[OwnerT]] | None = None
        self._retiring: asyncio.Task[None] | None = None
        self._owners: dict[str, _Owner[OwnerT]] = {}
        self._idle: asyncio.Task[None] | None = None
        self._closed = False
        self.launches = 0

    # -- reading -----------------------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def owners(self) -> list[str]:
        return list(self._owners)

    @property
    def browser(self) -> Launched[OwnerT] | None:
        """The running browser, if one is up."""
        task = self._launching
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return None
        return task.result()

    # -- owners ------------------------------------------------------------------------------------------------
    async def owner(self, owner_id: str) -> OwnerT:
        """The owner's context, creating it (and launching the browser) on first use."""
        if self._closed:
            raise BackendClosed()
        self._cancel_idle()
        try:
            browser = await asyncio.shield(self._ensure_launch())
            entry = self._owners.get(owner_id)
            if entry is None or entry.browser is not browser:
                task = asyncio.get_running_loop().create_task(browser.open_owner(owner_id))
                entry = self._owners[owner_id] = _Owner(browser, task)
                task.add_done_callback(lambda done: self._forget_failed(owner_id, done))
            return await asyncio.shield(entry.task)
        finally:
            self._arm_idle()

    async def release(self, owner_id: str) -> None:
        """End one owner: its context and pages close; the other owners are untouched. Unknown owners are fine."""
        entry = self._owners.pop(owner_id, None)
        if entry is not None:
            logger.info("Closing the shared browser's context of owner %s (%d left)", owner_id, len(self._owners))
            await run_shielded(self._close_owner(entry))
        self._arm_idle()

    def _forget_failed(self, owner_id: str, task: asyncio.Task[OwnerT]) -> None:
        entry = self._owners.get(owner_id)
        if entry is not None and entry.task is task and (task.cancelled() or task.exception() is not None):
            del self._owners[owner_id]
            self._arm_idle()

    @staticmethod
    async def _close_owner(entry: _Owner[OwnerT]) -> None:
        try:
            owned = await entry.task
        except BaseException:  # its creation failed or was cancelled: nothing to close
            return
        try:
            await owned.aclose()
        except Exception:
            logger.exception("Closing an owner's browser context failed")

    # -- the browser -------------------------------------------------------------------------------------------
    def _ensure_launch(self) -> asyncio.Task[Launched[OwnerT]]:
        task = self._launching
        if task is not None and (not task.done() or ((browser := self.browser) is not None and browser.alive)):
            return task
        dead = self.browser
        if dead is not None:
            logger.warning(
                "The shared browser died; starting a new one (%d owners lose their pages)", len(self._owners)
            )
            self._retire(dead)
        task = self._launching = asyncio.get_running_loop().create_task(self._start())
        task.add_done_callback(self._forget_failed_launch)
        return task

    async def _start(self) -> Launched[OwnerT]:
        retiring = self._retiring
        if retiring is not None:
            await asyncio.shield(retiring)  # the retired browser holds the slot until it is down
        self.launches += 1
        return await self._launch()

    def _forget_failed_launch(self, task: asyncio.Task[Launched[OwnerT]]) -> None:
        if self._launching is task and (task.cancelled() or task.exception() is not None):
            self._launching = None

    def _retire(self, browser: Launched[OwnerT]) -> None:
        """Forget ``browser`` and its owners now; close them in the background, after any earlier retirement."""
        owners = [entry for entry in self._owners.values() if entry.browser is browser]
        self._owners = {key: entry for key, entry in self._owners.items() if entry.browser is not browser}
        if self._launching is not None and self.browser is browser:
            self._launching = None
        previous = self._retiring

        async def close() -> None:
            if previous is not None:
                await previous
            for entry in owners:
                await self._close_owner(entry)
            try:
                await browser.aclose()
            except Exception:
                logger.exception("Closing the shared browser failed")

        self._retiring = asyncio.get_running_loop().create_task(close())

    # -- idle --------------------------------------------------------------------------------------------------
    def _arm_idle(self) -> None:
        if self._closed or self._owners or self._idle is not None or self._launching is None:
            return
        self._idle = asyncio.get_running_loop().create_task(self._stop_when_idle())

    def _cancel_idle(self) -> None:
        idle, self._idle = self._idle, None
        if idle is not None:
            idle.cancel()

    async def _stop_when_idle(self) -> None:
        await asyncio.sleep(self.idle_s)
        self._idle = None
        browser = self.browser
        if self._owners or browser is None:
            return
        logger.info("The shared browser had no owner for %.0f s: stopping it", self.idle_s)
        self._retire(browser)

    # -- close -------------------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Refuse further calls, close every owner's context and the browser (shielded; idempotent)."""
        self._closed = True
        await run_shielded(self._shutdown())

    async def _shutdown(self) -> None:
        self._cancel_idle()
        launching, self._launching = self._launching, None
        owners, self._owners = list(self._owners.values()), {}
        if launching is not None and not launching.done():
            launching.cancel()
        browser = None
        if launching is not None:
            with contextlib.suppress(BaseException):
                browser = await launching
        for entry in owners:
            if not entry.task.done():
                entry.task.cancel()
            await self._close_owner(entry)
        if browser is not None:
            try:
                await browser.aclose()
            except Exception:
                logger.exception("Closing the shared browser failed")
        if self._retiring is not None:
            with contextlib.suppress(Exception):
                await self._retiring

    async def __aenter__(self) -> SharedBrowser[OwnerT]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
