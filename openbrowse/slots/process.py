"""ManagedProcess: one supervised child process, spawned in its own process group.

Design (after simpervisor's ``SupervisedProcess`` and anyio's ``Process.aclose``):

* :meth:`ManagedProcess.start` spawns synchronously with ``subprocess.Popen(start_new_session=True)``. A
  synchronous spawn has no await point, so a cancellation can never land between "forked" and "tracked".
* Exit is observed with a ``pidfd`` registered on the event loop (a timer that polls ``waitid`` where pidfds
  are missing). The callback first SIGKILLs whatever is left of the child's process group (while the unreaped
  leader still pins the group id, so it can never hit a stranger), then reaps the child (``Popen.poll``), so no
  zombie stays behind, and resolves :attr:`died`. No background task is involved.
* stdout and stderr share one pipe that the loop drains into a bounded ring buffer, so a chatty child can
  never block on a full pipe; :meth:`output_tail` feeds error messages.
* :meth:`wait_ready` polls an async readiness probe with exponential backoff until a deadline, and fails fast
  with :class:`ProcessStartError` (carrying the output tail) when the child exits first.
* :meth:`aclose` is shielded from cancellation: SIGTERM to the group, a grace period, SIGKILL to the group,
  reap (group members that outlived the leader are killed at reaping time, see above).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from openbrowse.errors import ProcessStartError
from openbrowse.shielding import run_shielded

if TYPE_CHECKING:
    from pathlib import Path
    from types import TracebackType

    from openbrowse.slots.probes import Probe

__all__ = ["ManagedProcess", "OutputBuffer", "ProcessHook"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_READ_CHUNK = 65536
_POLL_INTERVAL = 0.05
_BACKOFF_START = 0.005
_BACKOFF_FACTOR = 1.5
_BACKOFF_MAX = 0.05  # a refused loopback connect costs microseconds; a late wake-up costs the caller


class OutputBuffer:
    """The last ``limit`` bytes a child wrote. Older bytes are dropped."""

    def __init__(self, limit: int = 64 * 1024) -> None:
        self._limit = limit
        self._data = bytearray()
        self.total_bytes = 0

    def append(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        self._data += chunk
        excess = len(self._data) - self._limit
        if excess > 0:
            del self._data[:excess]

    def tail(self, max_chars: int = 4000) -> str:
        text = self._data.decode("utf-8", errors="replace")
        return text[-max_chars:]

    def __len__(self) -> int:
        return len(self._data)


ProcessHook = Callable[["ManagedProcess"], None]


class ManagedProcess:
    """A named child process in its own process group. Use as ``async with`` or call ``start``/``aclose``."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        pass_fds: Sequence[int] = (),
        terminate_grace: float = 5.0,
        kill_grace: float = 5.0,
        output_limit: int = 64 * 1024,
        on_spawn: ProcessHook | None = None,
        on_exit: ProcessHook | None = None,
        expect_exit: bool = False,
    ) -> None:
        if not argv:
            raise ValueError("argv must not be empty")
        self.name = name
        self.argv: tuple[str, ...] = tuple(argv)
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._pass_fds = tuple(pass_fds)
        self.terminate_grace = terminate_grace
        self.kill_grace = kill_grace
        self.output = OutputBuffer(output_limit)
        self._on_spawn = on_spawn
        self._on_exit = on_exit
        self._popen: subprocess.Popen[bytes] | None = None
        self._started_at = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._exit: asyncio.Future[int] | None = None
        self._out_fd: int | None = None
        self._pidfd: int | None = None
        self._poll_handle: asyncio.TimerHandle | None = None
        self._output_waiter: asyncio.Future[None] | None = None
        self._closing = False
        self._closed = False
        self._expect_exit = expect_exit  # a one-shot command: its exit is logged at DEBUG, not as a crash

    # -- introspection --------------------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        if self._popen is None:
            raise RuntimeError(f"{self.name} has not been started")
        return self._popen.pid

    @property
    def started(self) -> bool:
        return self._popen is not None

    @property
    def started_at(self) -> float:
        """The wall-clock time (``time.time()``) the child was spawned; 0.0 before :meth:`start`."""
        return self._started_at

    @property
    def returncode(self) -> int | None:
        return None if self._popen is None else self._popen.returncode

    @property
    def running(self) -> bool:
        return self._popen is not None and self._exit is not None and not self._exit.done()

    @property
    def closing(self) -> bool:
        """True once :meth:`aclose` has begun: an exit from now on is expected, not a crash."""
        return self._closing

    @property
    def died(self) -> asyncio.Future[int]:
        """A future that resolves with the exit code once the child has exited and been reaped.

        Each access returns a new shielded view, so cancelling it never disturbs the supervision.
        """
        if self._exit is None:
            raise RuntimeError(f"{self.name} has not been started")
        return asyncio.shield(self._exit)

    def output_tail(self, max_chars: int = 4000) -> str:
        return self.output.tail(max_chars)

    def __repr__(self) -> str:
        pid = self._popen.pid if self._popen else None
        return f"<ManagedProcess {self.name} pid={pid} returncode={self.returncode}>"

    # -- start ----------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Spawn the child now (synchronously). Raises :class:`ProcessStartError` if it cannot be executed."""
        if self._popen is not None:
            raise RuntimeError(f"{self.name} was already started")
        loop = asyncio.get_running_loop()
        self._started_at = time.time()
        try:
            popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=self._env,
                cwd=self._cwd,
                pass_fds=self._pass_fds,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise ProcessStartError(f"{self.name} could not be started ({self.argv[0]}): {exc}") from exc
        self._popen = popen
        self._loop = loop
        self._exit = loop.create_future()
        assert popen.stdout is not None
        self._out_fd = popen.stdout.fileno()
        os.set_blocking(self._out_fd, False)
        loop.add_reader(self._out_fd, self._on_output)
        try:
            self._pidfd = os.pidfd_open(popen.pid)
        except (AttributeError, OSError):
            self._pidfd = None
            self._poll_handle = loop.call_later(_POLL_INTERVAL, self._poll_exit)
        else:
            loop.add_reader(self._pidfd, self._check_exit)
        logger.debug("Started %s (pid %d): %s", self.name, popen.pid, " ".join(self.argv))
        if self._on_spawn is not None:
            try:
                self._on_spawn(self)
            except Exception:  # the child runs and is tracked; a failing hook must not orphan it
                logger.exception("on_spawn hook of %s failed", self.name)

    # -- loop callbacks -------------------------------------------------------------------------------------
    def _on_output(self) -> None:
        fd = self._out_fd
        if fd is None:
            return
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self.output.append(chunk)
            waiter, self._output_waiter = self._output_waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        else:
            self._close_output()

    def _close_output(self) -> None:
        fd, self._out_fd = self._out_fd, None
        if fd is None:
            return
        assert self._loop is not None
        assert self._popen is not None
        assert self._popen.stdout is not None
        self._loop.remove_reader(fd)
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, _READ_CHUNK):  # drain what is already buffered
                self.output.append(chunk)
        self._popen.stdout.close()

    def _poll_exit(self) -> None:
        self._poll_handle = None
        self._check_exit()
        if self._exit is not None and not self._exit.done() and self._loop is not None:
            self._poll_handle = self._loop.call_later(_POLL_INTERVAL, self._poll_exit)

    def _check_exit(self) -> None:
        assert self._popen is not None
        assert self._exit is not None
        assert self._loop is not None
        if self._exit.done():
            return
        try:  # has it exited? (WNOWAIT: look, but leave the zombie, so its pid and group id stay ours)
            exited = os.waitid(os.P_PID, self._popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
            pinned = exited
        except ChildProcessError:  # already reaped (Popen caches the code); the group id is no longer pinned
            exited, pinned = True, False
        if not exited:
            return
        if pinned:
            # Kill what is left of the process group (Chromium's zygotes and renderers, websockify's forks) now,
            # while the unreaped leader guarantees that the group id cannot belong to anyone else.
            self._signal_group(signal.SIGKILL)
        returncode = self._popen.poll()  # reaps the child
        if returncode is None:
            return
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        if self._poll_handle is not None:
            self._poll_handle.cancel()
            self._poll_handle = None
        if self._closing or self._expect_exit:
            logger.debug("%s (pid %d) exited with code %d", self.name, self._popen.pid, returncode)
        else:
            logger.warning("%s (pid %d) exited unexpectedly with code %d", self.name, self._popen.pid, returncode)
        self._exit.set_result(returncode)
        if self._on_exit is not None:
            try:
                self._on_exit(self)
            except Exception:
                logger.exception("on_exit hook of %s failed", self.name)

    # -- readiness ------------------------------------------------------------------------------------------
    async def wait_ready(self, probe: Probe, *, within: float) -> None:
        """Poll ``probe`` until it returns True; fail if the child exits or ``within`` seconds pass.

        The probe runs with exponential backoff (5 ms doubling-ish to 50 ms), and again whenever the child writes
        output. One waiter at a time per process.
        """
        if self._exit is None:
            raise RuntimeError(f"{self.name} has not been started")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        delay = _BACKOFF_START
        last_error: BaseException | None = None
        while True:
            if self._exit.done():
                raise self._start_error(f"{self.name} exited with code {self._exit.result()} before it was ready")
            remaining = deadline - loop.time()
            try:
                async with asyncio.timeout(max(remaining, 0.05)):
                    if await probe():
                        return
            except TimeoutError as exc:
                last_error = exc
            except (OSError, ValueError) as exc:
                last_error = exc
            remaining = deadline - loop.time()
            if remaining <= 0:
                detail = f"; last probe error: {last_error!r}" if last_error else ""
                raise self._start_error(
                    f"{self.name} was not ready within {within:.1f} s (waiting for {probe.description}){detail}"
                )
            # Sleep until the backoff delay passes, the child exits, or it writes output: children tend to
            # announce readiness ("DevTools listening on …", "PORT=5910"), so the probe re-runs right then.
            self._output_waiter = loop.create_future()
            wake_on: set[asyncio.Future[Any]] = {self._exit, self._output_waiter}
            try:
                await asyncio.wait(wake_on, timeout=min(delay, remaining))
            finally:
                self._output_waiter = None
            delay = min(delay * _BACKOFF_FACTOR, _BACKOFF_MAX)

    def _start_error(self, message: str) -> ProcessStartError:
        if self._out_fd is not None:
            self._on_output()  # pick up output that is already in the pipe
        tail = self.output_tail()
        full = f"{message}. Output: {tail.strip()[-600:]}" if tail.strip() else message
        return ProcessStartError(full, stderr_tail=tail)

    # -- teardown -------------------------------------------------------------------------------------------
    def send_signal_to_group(self, sig: int) -> None:
        """Signal the child's whole process group; a no-op once the child has been reaped."""
        if self._popen is None or self._exit is None or self._exit.done():
            return
        self._signal_group(sig)

    def _signal_group(self, sig: int) -> None:
        assert self._popen is not None
        with contextlib.suppress(ProcessLookupError):
            try:
                os.killpg(self._popen.pid, sig)
            except PermissionError:
                logger.warning("Not allowed to signal process group %d of %s", self._popen.pid, self.name)

    async def _wait_exit(self, within: float) -> bool:
        assert self._exit is not None
        done, _ = await asyncio.wait({self._exit}, timeout=within)
        return bool(done)

    def expect_exit(self) -> None:
        """The caller is about to end the child some other way (e.g. by killing what it waits on): its exit is then
        part of a close, not a crash (no warning, and ``closing`` is true for the exit hooks)."""
        self._closing = True

    async def _shutdown(self) -> None:
        if self._popen is None or self._closed:
            return
        self._closing = True
        assert self._exit is not None
        if not self._exit.done():
            self.send_signal_to_group(signal.SIGTERM)
            if not await self._wait_exit(self.terminate_grace):
                logger.warning("%s did not exit %.1f s after SIGTERM; sending SIGKILL", self.name, self.terminate_grace)
                self.send_signal_to_group(signal.SIGKILL)
                if not await self._wait_exit(self.kill_grace):
                    logger.error("%s (pid %d) survived SIGKILL for %.1f s", self.name, self.pid, self.kill_grace)
        self._close_output()
        self._closed = self._exit.done()

    async def aclose(self) -> None:
        """Stop the child and its process group; shielded from cancellation; idempotent."""
        await run_shielded(self._shutdown())

    async def __aenter__(self) -> ManagedProcess:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
