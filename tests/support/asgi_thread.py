"""Serving an ASGI app on a free local port from a background thread (for fixture sites and fakes)."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import uvicorn


class _ReadyServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self._ready.set()


class ThreadedServer:
    """``with ThreadedServer(app) as server: server.url`` — waits on uvicorn's start-up, never sleeps."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, http="h11")
        self._ready = threading.Event()
        self._server = _ReadyServer(config, self._ready)
        self._thread = threading.Thread(target=self._run, name=f"asgi-{self.port}", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _run(self) -> None:
        try:
            asyncio.run(self._server.serve(sockets=[self._socket]))
        finally:
            self._ready.set()

    def start(self, timeout: float = 10.0) -> ThreadedServer:
        self._thread.start()
        if not self._ready.wait(timeout) or not self._server.started:
            raise RuntimeError(f"server on {self.url} did not start")
        return self

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._socket.close()

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()
