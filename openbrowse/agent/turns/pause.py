"""PauseSwitch: a person takes over the browser, and the agent waits (spec §21.5), as the engine's loop sees it.

A pause lands at the next safe point. browser-use's own pause (``Agent.pause``) makes its checkpoints raise
``InterruptedError``, which it handles as an interruption, not a failure: after the browser state is read, after the
model's reply (the reply is dropped) and before each further action of a chain (the action in flight finishes,
the rest is dropped). An interrupted step is not recorded, so the same step is taken again after the resume.
What browser-use does not do is cancel a model call in flight: :meth:`PauseSwitch.race` does, so a pause never
waits out a slow reply.

After the resume, the next agent call carries one note (how long, what the person did, their note) and sees the
full browser state, never the lean stub.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["PAUSED_MID_CALL", "PauseSwitch"]

T = TypeVar("T")

PAUSED_MID_CALL = "Paused for a person while the model was answering"


class PauseSwitch:
    """Requested and released from the engine's loop; its events bind to that loop on first use."""

    def __init__(self) -> None:
        self._requested = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._note: str | None = None

    @property
    def requested(self) -> bool:
        return self._requested.is_set()

    def request(self) -> None:
        self._requested.set()

    def release(self, note: str | None) -> None:
        self._requested.clear()
        self._note = note

    def keep_note(self, note: str) -> None:
        """Put back a note whose call a new pause interrupted."""
        self._note = note

    def take_note(self) -> str | None:
        """The resume note, once: the first agent call after a resume carries it."""
        note, self._note = self._note, None
        return note

    # -- where the agent is ------------------------------------------------------------------------------------
    def step_started(self) -> None:
        self._idle.clear()

    def step_ended(self) -> None:
        self._idle.set()

    async def landed(self) -> None:
        """Returns once no step is running: the pause has taken effect."""
        await self._idle.wait()

    # -- the model call ----------------------------------------------------------------------------------------
    async def race(self, work: Awaitable[T]) -> T:
        """``work``, unless a pause comes first: then it is cancelled and ``InterruptedError`` raised."""
        if self.requested:
            if asyncio.iscoroutine(work):
                work.close()
            raise InterruptedError(PAUSED_MID_CALL)
        call = asyncio.ensure_future(work)
        paused = asyncio.ensure_future(self._requested.wait())
        try:
            await asyncio.wait({call, paused}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            call.cancel()
            raise
        finally:
            paused.cancel()
        if call.done():
            return call.result()
        call.cancel()
        await asyncio.wait({call})
        raise InterruptedError(PAUSED_MID_CALL)
