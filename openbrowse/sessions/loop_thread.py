"""A worker thread with its own event loop, and awaiting coroutines across two loops.

:func:`run_on` runs a coroutine as a task on another thread's loop and awaits it from the current one: the
result or the exception (the same object, so its type is kept) comes back; cancelling the await cancels the
remote task and waits until it has finished. :class:`LoopThread` is one such thread; its owner enters it,
hands it work with :meth:`LoopThread.run`, and closes it, which stops the loop (leftover tasks are cancelled
and awaited, as ``asyncio.run`` does) and joins the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

from openbrowse.sessions.priority import lower_this_thread
from openbrowse.shielding import run_shielded

logger = logging.getLogger(__name__)

T = TypeVar("T")


class RemoteCancelled(RuntimeError):
    """The task on the other loop was cancelled by someone other than the caller (its loop shut down)."""


class LoopClosed(RuntimeError):
    """The other loop no longer runs: nothing can be handed to it."""


async def run_on(loop: asyncio.AbstractEventLoop, make: Callable[[], Awaitable[T]]) -> T:
    """Run ``make()`` as a task on ``loop`` (another thread's) and return its result here.

    ``make`` is called on ``loop``, so whatever it creates belongs there.
    """
    here = asyncio.get_running_loop()
    outcome: asyncio.Future[T] = here.create_future()
    remote: list[asyncio.Task[T]] = []

    def begin() -> None:
        task: asyncio.Task[T] = asyncio.ensure_future(_await(make))
        remote.append(task)
        task.add_done_callback(lambda done: post_to(here, _settle, done, outcome))

    try:
        loop.call_soon_threadsafe(begin)
    except RuntimeError as exc:
        raise LoopClosed(f"The event loop of {_owner(loop)} is closed") from exc
    try:
        return await asyncio.shield(outcome)
    except asyncio.CancelledError:
        if not outcome.done():
            post_to(loop, _cancel, remote)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(asyncio.wait({outcome}))
        if outcome.done() and not outcome.cancelled():
            outcome.exception()  # retrieved: the caller's cancellation wins over the remote ending
        raise


async def _await(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


def _settle(done: asyncio.Task[T], outcome: asyncio.Future[T]) -> None:
    if outcome.done():
        return
    if done.cancelled():
        outcome.set_exception(RemoteCancelled("The task on the other event loop was cancelled"))
    elif (error := done.exception()) is not None:
        outcome.set_exception(error)
    else:
        outcome.set_result(done.result())


def _cancel(remote: list[asyncio.Task[Any]]) -> None:
    for task in remote:
        task.cancel()


def post_to(loop: asyncio.AbstractEventLoop, callback: Callable[..., object], *args: Any) -> None:
    """Schedule ``callback`` on ``loop`` from any thread; a loop that has closed is past caring."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback, *args)


def _owner(loop: asyncio.AbstractEventLoop) -> str:
    return getattr(loop, "_openbrowse_owner", "another thread")


class LoopThread:
    """One thread running one event loop, from :meth:`__aenter__` to :meth:`aclose` (which joins it).

    ``nice``: how much lower than its creator's the thread's CPU priority is (see ``priority.py``)."""

    def __init__(self, name: str, *, nice: int = 0) -> None:
        self.name = name
        self.nice = nice
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise LoopClosed(f"{self.name} is not running")
        return self._loop

    @property
    def ident(self) -> int | None:
        """The thread's id while it runs (for tests and logs)."""
        return self._thread.ident if self._thread is not None else None

    async def __aenter__(self) -> LoopThread:
        here = asyncio.get_running_loop()
        ready: asyncio.Future[None] = here.create_future()
        self._thread = threading.Thread(target=self._serve, args=(here, ready), name=self.name, daemon=True)
        self._thread.start()
        try:
            await asyncio.shield(ready)
        except BaseException:
            # a cancelled start still waits until the loop runs (or failed), so that the close below can stop it
            await asyncio.shield(asyncio.wait({ready}))
            if not ready.cancelled():
                ready.exception()
            await run_shielded(self.aclose())
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await run_shielded(self.aclose())

    async def run(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run ``make()`` on this thread's loop; see :func:`run_on`."""
        return await run_on(self.loop, make)

    async def aclose(self) -> None:
        """Stop the loop (leftover tasks are cancelled and awaited) and join the thread. Idempotent."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        stop, loop = self._stop, self._loop
        if stop is not None and loop is not None:
            post_to(loop, stop.set)
        await run_shielded(asyncio.to_thread(thread.join))

    def _serve(self, home: asyncio.AbstractEventLoop, ready: asyncio.Future[None]) -> None:
        lower_this_thread(self.nice)
        try:
            asyncio.run(self._main(home, ready))
        except BaseException as exc:
            logger.exception("The event loop of %s failed", self.name)
            post_to(home, _fail, ready, exc)
        finally:
            self._loop = None

    async def _main(self, home: asyncio.AbstractEventLoop, ready: asyncio.Future[None]) -> None:
        loop = asyncio.get_running_loop()
        loop._openbrowse_owner = self.name  # type: ignore[attr-defined]
        self._stop = stop = asyncio.Event()
        self._loop = loop
        post_to(home, _succeed, ready)
        await stop.wait()


def _succeed(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


def _fail(ready: asyncio.Future[None], exc: BaseException) -> None:
    if not ready.done():
        ready.set_exception(exc)
