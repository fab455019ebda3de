"""ScriptHost: the process a slot's ``run_code_file`` scripts run in, and the server's end of its channel.

The process (``python -I -m openbrowse.scripthost``) starts on the first run, in its own process group, wrapped
by the slot's sandbox command (identity when unsandboxed), with only the environment it is given. It connects
to a Unix socket this object listens on only until the process has said hello with its one-time token; the
socket file is then gone. Every line the host sends is validated (``script_wire.py``); helper calls go to the
caller's handler and are answered in order of completion.

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
import os
import secrets
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from openbrowse.domain.scripts import CallHandler, ScriptCallError, ScriptEnd, ScriptOutcome, ScriptRun
from openbrowse.errors import ProcessStartError
from openbrowse.scripthost.wire import MAX_LINE, OUTPUT_LIMIT, TOKEN_ENV
from openbrowse.shielding import run_shielded
from openbrowse.slots.process import ManagedProcess
from openbrowse.slots.script_wire import ERROR_LIMIT, Call, Done, Hello, Output, Refused, encode, parse, read_line

logger = logging.getLogger(__name__)

__all__ = ["ScriptHost", "host_environment", "identity"]

START_TIMEOUT = 15.0
HELLO_WAIT = 5.0
KILL_GRACE = 3.0
"""Seconds past a run's limit before the process is killed (the host stops an awaiting script at the limit)."""
MAX_CALLS = 32
SOCKET_PATH_LIMIT = 107
SETTLE_WAIT = 2.0

CommandWrapper = Callable[[list[str]], list[str]]


def identity(argv: list[str]) -> list[str]:
    """The command wrapper of an unsandboxed slot."""
    return argv


def host_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment a script host gets: a fixed PATH and locale, nothing of the server's (spec §24.3)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
    env.update(extra or {})
    return env


class _Output:
    def __init__(self) -> None:
        self._parts: list[str] = []
        self.kept = 0
        self.received = 0

    def add(self, text: str) -> None:
        self.received += len(text)
        room = OUTPUT_LIMIT - self.kept
        if room > 0:
            self._parts.append(text[:room])
            self.kept += min(room, len(text))

    @property
    def text(self) -> str:
        return "".join(self._parts)


class _Connection:
    """One connected host: the message pump, the run being served, and the helper calls in flight."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._write_lock = asyncio.Lock()
        self.messages: asyncio.Queue[Output | Done | None] = asyncio.Queue()
        self.run_id: int | None = None
        self.on_call: CallHandler | None = None
        self.calls: set[asyncio.Task[None]] = set()
        self.ended_by: str | None = None
        self._pump = asyncio.ensure_future(self._read())

    async def send(self, message: dict[str, Any]) -> None:
        async with self._write_lock:
            self._writer.write(encode(message))
            await self._writer.drain()

    def ended(self) -> None:
        self.messages.put_nowait(None)

    def abort(self, reason: str) -> None:
        if self.ended_by is None:
            self.ended_by = reason
        self._pump.cancel()
        for task in self.calls:
            task.cancel()
        self._writer.transport.abort()
        self.ended()

    async def settle_calls(self) -> None:
        """Cancel the calls a finished run left (an un-awaited ``fetch``) and wait briefly for them to end."""
        pending = set(self.calls)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=SETTLE_WAIT)

    async def _read(self) -> None:
        try:
            while True:
                line = await read_line(self._reader)
                if line is None:
                    break
                message = line if isinstance(line, Refused) else parse(line)
                if isinstance(message, Refused):
                    if message.call_id is not None:
                        await self._refuse(message.call_id, "ValueError", message.reason)
                    continue
                if isinstance(message, Call):
                    await self._dispatch(message)
                elif isinstance(message, Output | Done) and message.id == self.run_id:
                    self.messages.put_nowait(message)
        except (OSError, ConnectionError):
            pass
        finally:
            self.ended()

    async def _dispatch(self, call: Call) -> None:
        handler = self.on_call
        if handler is None:
            await self._refuse(call.id, "RuntimeError", "No script is running, so this call cannot be served.")
        elif len(self.calls) >= MAX_CALLS:
            await self._refuse(call.id, "RuntimeError", f"Too many helper calls at once (at most {MAX_CALLS}).")
        else:
            task = asyncio.ensure_future(self._serve(call, handler))
            self.calls.add(task)
            task.add_done_callback(self.calls.discard)

    async def _serve(self, call: Call, handler: CallHandler) -> None:
        try:
            value = await handler(call.method, call.args)
            line = encode({"type": "reply", "id": call.id, "ok": True, "value": value})
        except ScriptCallError as exc:
            await self._refuse(call.id, exc.kind, exc.message)
            return
        except (TypeError, ValueError):  # a value JSON cannot carry
            await self._refuse(call.id, "TypeError", f"{call.method} returned a value the channel cannot carry.")
            return
        except Exception:
            logger.exception("A script's %s call failed on the server", call.method)
            await self._refuse(call.id, "RuntimeError", f"The server could not complete {call.method}.")
            return
        if len(line) > MAX_LINE:
            await self._refuse(call.id, "ValueError", f"The reply to {call.method} is too large for the channel.")
            return
        async with self._write_lock:
            self._writer.write(line)
            await self._writer.drain()

    async def _refuse(self, call_id: int, kind: str, message: str) -> None:
        reply = {"type": "reply", "id": call_id, "ok": False, "error": message[:ERROR_LIMIT], "kind": kind}
        with contextlib.suppress(OSError, ConnectionError):
            await self.send(reply)


class ScriptHost:
    """One slot's script host process, started on first use; see the module docstring."""

    def __init__(
        self,
        name: str,
        command_wrapper: CommandWrapper,
        env: Mapping[str, str],
        socket_dir: Path,
        owner_uid: int | None,
        cdp_port: int,
        *,
        python: str = sys.executable,
        start_timeout: float = START_TIMEOUT,
        on_death: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self._wrap = command_wrapper
        self._env = dict(env)
        self._socket_dir = socket_dir
        self._owner_uid = owner_uid
        self._cdp_port = cdp_port
        self._python = python
        self._start_timeout = start_timeout
        self._on_death = on_death
        self._process: ManagedProcess | None = None
        self._connection: _Connection | None = None
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
        output = _Output()
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

    async def _died(self, connection: _Connection, output: _Output) -> ScriptOutcome:
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
        self._socket_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        token = secrets.token_hex(16)
        path = self._socket_dir / f"scripthost-{secrets.token_hex(4)}.sock"
        if len(os.fsencode(path)) > SOCKET_PATH_LIMIT:
            raise ProcessStartError(f"The script host's socket path is too long for a Unix socket: {path}")
        connected: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
            asyncio.get_running_loop().create_future()
        )

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                line = await asyncio.wait_for(read_line(reader), HELLO_WAIT)
            except (TimeoutError, OSError, ConnectionError):
                line = None
            hello = parse(line) if isinstance(line, bytes) else None
            if isinstance(hello, Hello) and hmac.compare_digest(hello.token, token) and not connected.done():
                connected.set_result((reader, writer))
            else:
                writer.close()

        server = await asyncio.start_unix_server(accept, path=str(path), limit=MAX_LINE)
        process: ManagedProcess | None = None
        try:
            os.chmod(path, 0o600)
            if self._owner_uid is not None and self._owner_uid != os.geteuid():
                os.chown(path, self._owner_uid, -1)
            argv = [self._python, "-I", "-m", "openbrowse.scripthost", "--channel", str(path)]
            argv += ["--cdp-port", str(self._cdp_port)]
            process = ManagedProcess(
                self.name,
                self._wrap(argv),
                env={**self._env, TOKEN_ENV: token},
                cwd=self._socket_dir,
                terminate_grace=0.5,
                kill_grace=2.0,
                expect_exit=True,
            )
            process.start()
            either: set[asyncio.Future[Any]] = {connected, process.died}
            await asyncio.wait(either, timeout=self._start_timeout, return_when=asyncio.FIRST_COMPLETED)
            if not connected.done():
                tail = process.output_tail(600).strip()
                raise ProcessStartError(
                    f"The script host did not connect within {self._start_timeout:.0f} s"
                    + (f": {tail}" if tail else "."),
                    stderr_tail=tail,
                )
        except BaseException:
            if process is not None:
                self._reap(process)
            if connected.done() and not connected.cancelled():
                connected.result()[1].close()
            connected.cancel()
            raise
        finally:
            server.close()
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        reader, writer = connected.result()
        connection = _Connection(reader, writer)
        process.died.add_done_callback(lambda _: connection.ended())
        self._process, self._connection = process, connection

    def _kill_now(self, reason: str, *, lost: bool) -> None:
        """SIGKILL the process group now; the reap runs on its own (nothing here waits for the script)."""
        process, self._process = self._process, None
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.abort(reason)
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
