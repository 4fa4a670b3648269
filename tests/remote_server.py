"""A local HTTP server with ``Range`` support, in a thread, for the URL-input tests.

Serves the files of one folder on 127.0.0.1 (no test needs the internet). Kinds of
misbehaviour a test can ask for: a required header (403 without it), a
connection dropped part-way through a response (``drop_after`` bytes, the first
``drops`` times), as a flaky network or a proxy would, and a server that answers
only after ``delay`` seconds.
"""

from __future__ import annotations

import contextlib
import http.server
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ServerState:
    root: Path
    required: dict[str, str] = field(default_factory=dict)
    drop_after: int | None = None  # bytes sent before the connection is cut
    drops: int = 0  # how many responses are cut (then it serves normally)
    delay: float = 0.0  # seconds before answering (a server that hangs)
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range)


def _handler(state: ServerState) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            state.requests.append((self.path, self.headers.get("Range")))
            time.sleep(state.delay)
            for key, value in state.required.items():
                if self.headers.get(key) != value:
                    self.send_error(403, "Forbidden")
                    return
            path = state.root / self.path.split("?")[0].lstrip("/")
            if not path.is_file():
                self.send_error(404, "Not Found")
                return
            data = path.read_bytes()
            start, end = 0, len(data) - 1
            match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range") or "")
            if match:
                start = int(match.group(1))
                end = min(int(match.group(2) or end), len(data) - 1)
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start : end + 1]
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            if state.drops > 0 and state.drop_after is not None and len(body) > state.drop_after:
                state.drops -= 1
                self.wfile.write(body[: state.drop_after])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

    return Handler


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up (a timeout test) is expected, not news


@contextlib.contextmanager
def serve(root: Path, **kwargs: object) -> Iterator[tuple[str, ServerState]]:
    """``(base URL, state)`` of a server on 127.0.0.1 serving ``root``; stopped after."""
    state = ServerState(Path(root), **kwargs)  # type: ignore[arg-type]
    server = _QuietServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
