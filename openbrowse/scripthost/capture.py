"""A run's ``print`` output: kept per run, and sent to the server while the script runs.

``sys.stdout`` and ``sys.stderr`` point here during a run, so library output counts too. A thread sends what
was printed every quarter second: even a script that never yields again (``while True: pass``) and is killed at
its limit has shown what it printed before. Past :data:`OUTPUT_LIMIT` characters only the count goes on.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable

from openbrowse.scripthost.wire import OUTPUT_CHUNK, OUTPUT_LIMIT

FLUSH_EVERY = 0.25


class Capture(io.TextIOBase):
    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._unsent: list[str] = []
        self._unsent_chars = 0
        self.kept = 0
        self.total = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            self.total += len(text)
            room = self._limit - self.kept
            if room > 0:
                piece = text[:room]
                self._unsent.append(piece)
                self._unsent_chars += len(piece)
                self.kept += len(piece)
        return len(text)

    def take(self, most: int = OUTPUT_CHUNK) -> str:
        """Up to ``most`` characters printed since the last take."""
        with self._lock:
            text = "".join(self._unsent)
            head, rest = text[:most], text[most:]
            self._unsent = [rest] if rest else []
            self._unsent_chars = len(rest)
        return head

    def pending(self) -> int:
        with self._lock:
            return self._unsent_chars


class Flusher:
    """Sends a running script's output every :data:`FLUSH_EVERY` seconds from its own thread."""

    def __init__(self, send: Callable[[str], None]) -> None:
        self._send = send
        self._capture: Capture | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        threading.Thread(target=self._serve, name="flusher", daemon=True).start()

    def watch(self, capture: Capture | None) -> None:
        """Start sending ``capture``'s output; None stops (what is still unsent stays for the ``done`` message)."""
        with self._lock:  # waits for a send under way, so every output message goes before the done
            self._capture = capture
        if capture is not None:
            self._wake.set()

    def _serve(self) -> None:
        while True:
            self._wake.wait()
            with self._lock:
                capture = self._capture
                if capture is None:
                    self._wake.clear()
                    continue
                self._drain(capture)
            time.sleep(FLUSH_EVERY)

    def _drain(self, capture: Capture) -> None:
        while capture.pending():
            text = capture.take()
            if not text:
                break
            try:
                self._send(text)
            except (OSError, ValueError):
                return
