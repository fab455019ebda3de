"""ScreenRecorder: ffmpeg ``x11grab`` recording one slot's display to a fragmented MP4 (spec §22.1).

Where it runs. Xvfb's socket lives in the slot sandbox's private ``/tmp``, so ffmpeg runs inside the sandbox like
every other slot process (the slot's uid, namespaces and cgroup; own process group; always reaped): whatever a
hostile page puts on the screen is decoded by an unprivileged process, never by the server.

Where it writes. The server opens the output file itself, in the owner's file area, and hands ffmpeg only that
descriptor (``pipe:<fd>``): the sandbox still sees nothing of the data directory, and the file cannot be swapped
for a link. A pipe output is not seekable, which is exactly what a fragmented MP4 (``empty_moov``, a fragment per
keyframe, a keyframe every :data:`KEYFRAME_SECONDS`) needs: every fragment is complete once written, so a recorder
killed mid-run still leaves a playable file that lacks only its last fragment.

How big. ``max_bytes`` (the room left in the owner's file area) is ffmpeg's file-size limit (``prlimit --fsize``,
``RLIMIT_FSIZE``): the kernel refuses every write past it and ends ffmpeg with ``SIGXFSZ``, so a recording never
takes more than its owner has left, and what was written up to there stays playable.

Stopping. ``nsenter`` forks to enter the pid namespace and dies on SIGINT without passing it on, so a clean stop
signals ffmpeg itself (found among the leader's descendants) with SIGINT, lets it write its last fragment, and
falls back to the process group's TERM then KILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from openbrowse.shielding import run_shielded
from openbrowse.slots.process import ManagedProcess, ProcessHook

__all__ = ["KEYFRAME_SECONDS", "ScreenRecorder", "find_ffmpeg", "recorder_argv"]

logger = logging.getLogger(__name__)

KEYFRAME_SECONDS = 2
"""A keyframe (and so a fragment) every 2 s: a killed recorder loses at most that much."""
STOP_GRACE = 5.0
FIRST_OUTPUT_TIMEOUT = 15.0
_POLL_START, _POLL_MAX = 0.01, 0.1
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def find_ffmpeg(name: str) -> str | None:
    """The ffmpeg executable ``name`` (on PATH or a path), or None when there is none."""
    if not name:
        return None
    return shutil.which(name)


def size_limited(argv: list[str], max_bytes: int | None) -> list[str]:
    """``argv`` under a file-size limit of ``max_bytes`` (util-linux ``prlimit``); as is without a limit."""
    if max_bytes is None:
        return argv
    return [shutil.which("prlimit") or "/usr/bin/prlimit", f"--fsize={max(max_bytes, 1)}", "--", *argv]


def recorder_argv(ffmpeg: str, display: str, fps: int, output_fd: int) -> list[str]:
    """ffmpeg grabbing ``display`` at ``fps`` into a fragmented H.264 MP4 written to ``output_fd``."""
    return [
        ffmpeg, "-hide_banner", "-loglevel", "error", "-nostdin",
        "-f", "x11grab", "-draw_mouse", "1", "-framerate", str(fps), "-i", display,
        "-c:v", "libx264", "-preset", "ultrafast", "-tune", "stillimage", "-crf", "30", "-pix_fmt", "yuv420p",
        "-g", str(fps * KEYFRAME_SECONDS), "-threads", "1",
        "-movflags", "frag_keyframe+empty_moov+default_base_moof",
        "-f", "mp4", f"pipe:{output_fd}",
    ]  # fmt: skip


class ScreenRecorder:
    """One recording: :meth:`start` opens ``output`` (which must not exist) and spawns ffmpeg; :meth:`stop` ends
    it (shielded, idempotent). ``wrap`` enters the slot's sandbox (identity when unsandboxed)."""

    def __init__(
        self,
        name: str,
        *,
        ffmpeg: str,
        display: str,
        fps: int,
        output: Path,
        wrap: Callable[[list[str]], list[str]],
        env: Mapping[str, str],
        on_exit: ProcessHook | None = None,
        max_bytes: int | None = None,
    ) -> None:
        """``max_bytes``: the most the file may grow to (see the module docstring); None for no limit."""
        self.name = name
        self.max_bytes = max_bytes
        self.output = output
        self._ffmpeg = ffmpeg
        self._display = display
        self._fps = fps
        self._wrap = wrap
        self._env = dict(env)
        self._on_exit = on_exit
        self.process: ManagedProcess | None = None
        self.started_at = 0.0
        """Wall-clock time (``time.time()``) of the spawn."""
        self.first_output_at: float | None = None
        """Wall-clock time ffmpeg first wrote: its header goes out once the first frame is grabbed, so this is where
        the video's 0:00 is (about 0.5-1 s after the spawn: nsenter, ffmpeg's and x264's start)."""
        self._watch: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running

    def start(self) -> None:
        """Create the output file and spawn ffmpeg (synchronously: nothing can land between the two)."""
        self.output.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.output, _CREATE, 0o644)
        try:
            argv = self._wrap(size_limited(recorder_argv(self._ffmpeg, self._display, self._fps, fd), self.max_bytes))
            process = ManagedProcess(
                self.name, argv, env=self._env, pass_fds=(fd,), terminate_grace=2.0, on_exit=self._on_exit
            )
            process.start()
        except BaseException:
            self.output.unlink(missing_ok=True)
            raise
        finally:
            os.close(fd)  # ffmpeg holds its own copy
        self.process = process
        self.started_at = process.started_at
        self._watch = asyncio.get_running_loop().create_task(self._watch_first_output(), name=f"{self.name}-start")
        logger.info("Recording %s to %s (pid %d)", self._display, self.output, process.pid)

    def ffmpeg_pid(self) -> int | None:
        """ffmpeg's host pid: the leader itself when unsandboxed, else nsenter's child (None once gone)."""
        if self.process is None or not self.process.running:
            return None
        for pid in _descendants(self.process.pid):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().strip() == "ffmpeg":
                    return pid
        return None

    async def stop(self) -> int | None:
        """SIGINT ffmpeg (it writes its last fragment), then the group's TERM/KILL; return ffmpeg's exit code."""
        process = self.process
        if process is None:
            return None
        await run_shielded(self._stop(process))
        return process.returncode

    async def _watch_first_output(self) -> None:
        """Note when the file first grows (polled with backoff; the writer is in another namespace)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FIRST_OUTPUT_TIMEOUT
        delay = _POLL_START
        while self.process is not None and self.process.running and loop.time() < deadline:
            with contextlib.suppress(OSError):
                if self.output.stat().st_size > 0:
                    self.first_output_at = time.time()
                    return
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, _POLL_MAX)

    async def _stop(self, process: ManagedProcess) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
        if process.running:
            process.expect_exit()
            pid = self.ffmpeg_pid()
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGINT)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.died, STOP_GRACE)
        await process.aclose()


def _descendants(root: int) -> list[int]:
    """``root`` and its descendants, parents first (from ``/proc/<pid>/task/<tid>/children``)."""
    found = [root]
    index = 0
    while index < len(found):
        pid = found[index]
        index += 1
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{pid}/task"):
                text = Path(f"/proc/{pid}/task/{task}/children").read_text()
                found.extend(int(child) for child in text.split())
    return found
