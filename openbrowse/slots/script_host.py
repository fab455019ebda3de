"""ScriptHost: the process a slot's ``run_code_file`` scripts run in, and the server's end of its channel.

The process (``python -I -m openbrowse.scripthost``) starts on the first run, in its own process group, wrapped
by the slot's script-host command (its own uid and network namespace, :meth:`SlotSandbox.script_command`;
identity when unsandboxed), with only the environment it is given. It is handed its two sockets as inherited
descriptors, each one end of a ``socketpair`` made here: the channel (validated lines, helper calls answered in
order of completion: ``script_channel.py``) and its CDP stream, which reaches the slot's Chromium only through
the page filter (``script_cdp.py``). No socket file, no path, nothing a slot process could swap; the host's
first line is a hello with its one-time token.

A run that outlives its limit by :data:`KILL_GRACE` (a loop that never yields), a cancelled run (the session
stopped) and :meth:`kill` / :meth:`aclose` SIGKILL the process group at once; the reap happens on its own. A
killed or crashed host costs only its namespace: the next run starts a fresh process and says the namespace was
lost. A run for another owner (session) than the last never sees the previous owner's namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import itertools
import logging
import secrets
import signal
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from openbrowse.domain.scripts import CallHandler, ScriptEnd, ScriptOutcome, ScriptRun
from openbrowse.errors import ProcessStartError
from openbrowse.scripthost.wire import MAX_LINE, TOKEN_ENV
from openbrowse.shielding import run_shielded
from openbrowse.slots.process import ManagedProcess
from openbrowse.slots.script_cdp import ScriptCdp
from openbrowse.slots.script_channel import SETTLE_WAIT, HostConnection, RunOutput
from openbrowse.slots.script_wire import Hello, Output, parse, read_line

logger = logging.getLogger(__name__)

__all__ = ["CommandWrapper", "ScriptHost", "host_environment", "identity"]

START_TIMEOUT = 15.0
HELLO_WAIT = 5.0
KILL_GRACE = 3.0
"""Seconds past a run's limit before the process is killed (the host stops an awaiting script at the limit)."""

CommandWrapper = Callable[[list[str]], list[str]]


def identity(argv: list[str]) -> list[str]:
    """The command wrapper of an unsandboxed slot."""
    return argv


def host_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment a script host gets: a fixed PATH and locale, nothing of the server's (spec §24.3)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
    env.update(extra or {})
    return env


class ScriptHost:
    """One slot's script host process, started on first use; see the module docstring."""

    def __init__(
        self,
        name: str,
        command_wrapper: CommandWrapper,
        env: Mapping[str, str],
        ws_url: Callable[[], str],
        *,
        cwd: Path = Path("/"),
        python: str = sys.executable,
        start_timeout: float = START_TIMEOUT,
        on_death: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self._wrap = command_wrapper
        self._env = dict(env)
        self._ws_url = ws_url
        self._cwd = cwd
        self._python = python
        self._start_timeout = start_timeout
        self._on_death = on_death
        self._process: ManagedProcess | None = None
        self._connection: HostConnection | None = None
        self._cdp: ScriptCdp | None = None
        self._lock = asyncio.Lock()
        self._owner: str | None = None
        self._lost = False
        self._closed = False
        self._run_ids = itertools.count(1)
        self._reaping: set[asyncio.Task[None]] = set()

    @property
    def pid(self) -> int | None:
        """The host process's pid (the wrapper's when sandboxed) while one runs."""
        process = self._process
        return process.pid if process is not None and process.running else None

    @property
    def process(self) -> ManagedProcess | None:
        return self._process

    # -- runs ----------------------------------------------------------------------------------------------
    async def run(self, request: ScriptRun, on_call: CallHandler) -> ScriptOutcome:
        if self._closed:
            return ScriptOutcome(ScriptEnd.UNAVAILABLE, "", 0, error="The script host has been shut down.")
        async with self._lock:
            try:
                return await self._run_locked(request, on_call)
            except asyncio.CancelledError:
                self._kill_now("the run was cancelled", lost=True)
                raise

    async def _run_locked(self, request: ScriptRun, on_call: CallHandler) -> ScriptOutcome:
        if self._owner != request.owner:
            self._kill_now("another session's run", lost=False)
            self._lost = False
        lost = self._lost
        if self._connection is None:
            self._lost = False
            try:
                await self._start()
            except ProcessStartError as exc:
                return ScriptOutcome(ScriptEnd.UNAVAILABLE, "", 0, error=exc.message, namespace_lost=lost)
        self._owner = request.owner
        outcome = await self._exchange(request, on_call)
        return replace(outcome, namespace_lost=lost)

    async def _exchange(self, request: ScriptRun, on_call: CallHandler) -> ScriptOutcome:
        connection = self._connection
        assert connection is not None
        run_id = next(self._run_ids)
        connection.run_id, connection.on_call = run_id, on_call
        if self._cdp is not None:
            self._cdp.focus(request.target_id)
        output = RunOutput()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + request.limit + KILL_GRACE
        try:
            await connection.send(
                {
                    "type": "run",
                    "id": run_id,
                    "source": request.source,
                    "filename": request.filename,
                    "targetId": request.target_id,
                    "limit": request.limit,
                    "store": request.store,
                }
            )
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        message = await connection.messages.get()
                except TimeoutError:
                    self._kill_now("the time limit", lost=True)
                    return ScriptOutcome(ScriptEnd.KILLED, output.text, output.received)
                if message is None:
                    return await self._died(connection, output)
                if isinstance(message, Output):
                    output.add(message.text)
                    continue
                output.add(message.stdout)
                end = ScriptEnd.TIMED_OUT if message.timedOut else ScriptEnd.FAILED if message.error else None
                chars = max(message.stdoutChars, output.received)
                return ScriptOutcome(end or ScriptEnd.FINISHED, output.text, chars, error=message.error)
        except (OSError, ConnectionError):
            return await self._died(connection, output)
        finally:
            connection.run_id, connection.on_call = None, None
            await connection.settle_calls()

    async def _died(self, connection: HostConnection, output: RunOutput) -> ScriptOutcome:
        process = self._process
        if connection.ended_by is not None:
            error = f"The script host was stopped ({connection.ended_by})."
        else:
            code = None
            if process is not None:
                with contextlib.suppress(TimeoutError):
                    code = await asyncio.wait_for(process.died, SETTLE_WAIT)
            tail = process.output_tail(600).strip() if process is not None else ""
            error = f"The script host exited unexpectedly (exit code {code})" + (f": {tail}" if tail else ".")
            logger.warning("%s: %s", self.name, error)
            if self._on_death is not None:  # e.g. the memory cap's killer: the slot learns it before the agent does
                self._on_death()
        self._kill_now("it died", lost=True)
        return ScriptOutcome(ScriptEnd.CRASHED, output.text, output.received, error=error)

    # -- the process ---------------------------------------------------------------------------------------
    async def _start(self) -> None:
        token = secrets.token_hex(16)
        channel, channel_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        cdp, cdp_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        process: ManagedProcess | None = None
        writer: asyncio.StreamWriter | None = None
        try:
            argv = [self._python, "-I", "-m", "openbrowse.scripthost"]
            argv += ["--channel-fd", str(channel_child.fileno()), "--cdp-fd", str(cdp_child.fileno())]
            process = ManagedProcess(
                self.name,
                self._wrap(argv),
                env={**self._env, TOKEN_ENV: token},
                cwd=self._cwd,
                pass_fds=(channel_child.fileno(), cdp_child.fileno()),
                terminate_grace=0.5,
                kill_grace=2.0,
                expect_exit=True,
            )
            process.start()
            channel_child.close()
            cdp_child.close()
            reader, writer = await asyncio.open_connection(sock=channel, limit=MAX_LINE)
            hello = asyncio.ensure_future(self._hello(reader, token))
            either: set[asyncio.Future[Any]] = {hello, process.died}
            await asyncio.wait(either, timeout=self._start_timeout, return_when=asyncio.FIRST_COMPLETED)
            if not hello.done() or not hello.result():
                hello.cancel()
                tail = process.output_tail(600).strip()
                raise ProcessStartError(
                    f"The script host did not connect within {self._start_timeout:.0f} s"
                    + (f": {tail}" if tail else "."),
                    stderr_tail=tail,
                )
        except BaseException:
            if process is not None:
                self._reap(process)
            if writer is not None:
                writer.close()
            for sock in (channel, channel_child, cdp, cdp_child):
                sock.close()
            raise
        connection = HostConnection(reader, writer)
        filtered = ScriptCdp(self.name, cdp, self._ws_url)
        filtered.start()
        process.died.add_done_callback(lambda _: connection.ended())
        self._process, self._connection, self._cdp = process, connection, filtered

    @staticmethod
    async def _hello(reader: asyncio.StreamReader, token: str) -> bool:
        try:
            line = await read_line(reader)
        except (OSError, ConnectionError):
            return False
        hello = parse(line) if isinstance(line, bytes) else None
        return isinstance(hello, Hello) and hmac.compare_digest(hello.token, token)

    def _kill_now(self, reason: str, *, lost: bool) -> None:
        """SIGKILL the process group now; the reap runs on its own (nothing here waits for the script)."""
        process, self._process = self._process, None
        connection, self._connection = self._connection, None
        cdp, self._cdp = self._cdp, None
        if connection is not None:
            connection.abort(reason)
        if cdp is not None and (closing := cdp.abort()) is not None:
            self._reaping.add(closing)
            closing.add_done_callback(self._reaping.discard)
        if process is not None:
            self._reap(process)
            if lost:
                self._lost = True

    def _reap(self, process: ManagedProcess) -> None:
        process.send_signal_to_group(signal.SIGKILL)
        task = asyncio.ensure_future(process.aclose())
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)

    async def kill(self) -> None:
        """Kill the process now (the next run starts a fresh one) and wait for the reap; shielded."""
        await run_shielded(self._kill_and_reap())

    async def aclose(self) -> None:
        """Kill the process and refuse further runs; shielded, idempotent."""
        self._closed = True
        await run_shielded(self._kill_and_reap())

    async def _kill_and_reap(self) -> None:
        self._kill_now("the host was shut down", lost=False)
        while self._reaping:
            await asyncio.gather(*self._reaping, return_exceptions=True)
