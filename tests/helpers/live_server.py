"""A live app for the browser tests: :class:`LiveServer` runs a Starlette app (the viewer)
under uvicorn on a free loopback port in a thread, waits until it serves, and stops it."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any


class LiveServer:
    """``LiveServer(app).url`` is ``http://127.0.0.1:PORT/`` once the server has started
    (within ``timeout`` seconds, else an assertion fails); :meth:`close` stops it."""

    def __init__(self, app: Any, timeout: float = 30.0) -> None:
        import uvicorn

        self._timeout = timeout
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self._sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=self._timeout)
        self._sock.close()
