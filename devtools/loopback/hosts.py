"""In-process hosts for the transport tests: a webhook receiver that checks signatures,
and hosts that accept connections and then misbehave (silent, trickling)."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from devtools.loopback.servers import LOOPBACK
from omnium.transports.webhook import verify_signature

# --- webhook receiver ---------------------------------------------------------------------


class LoopbackHTTPServer(ThreadingHTTPServer):
    # http.server listens with a backlog of 5: a burst of senders (a 500-way fan-out from 32
    # threads) overflows it and the kernel drops connections, which the clients retry only
    # after a second. A real receiver listens with a deep backlog.
    request_queue_size = 512
    daemon_threads = True


def serve_http(handler: type[BaseHTTPRequestHandler]) -> LoopbackHTTPServer:
    """An HTTP server on a free loopback port, serving in a daemon thread; `shutdown()` and
    `server_close()` end it."""
    server = LoopbackHTTPServer((LOOPBACK, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class QuietHandler(BaseHTTPRequestHandler):
    """What every loopback HTTP receiver's handler does: read the body, answer briefly, log
    nothing (the test output stays readable)."""

    def read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("content-length", 0)))

    def answer(self, status: int = 200, body: bytes = b"ok", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {**(headers or {}), "content-length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool


@dataclass
class WebhookReceiver:
    """Records every POST, checks its signature with ``verify_signature`` (401 when it
    fails), and answers with ``replies`` in order, then 200."""

    secret: str
    deliveries: list[Delivery] = field(default_factory=list)
    replies: list[tuple[int, dict[str, str]]] = field(default_factory=list)

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = self.read_body()
                headers = dict(self.headers.items())
                verified = verify_signature(receiver.secret, headers, body)
                receiver.deliveries.append(Delivery(self.path, headers, body, verified))
                status, extra = receiver.replies.pop(0) if receiver.replies else (200, {})
                status = status if verified else 401
                self.answer(status, f"received {status}".encode(), extra)

        self.http = serve_http(Handler)
        return self

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.http.server_address[1]}/feeds"

    def destination_config(self, url: str | None = None) -> dict:
        """A webhook destination's config aimed at this receiver (or another `url`)."""
        return {"url": url or self.url}

    def credentials(self) -> dict:
        return {"secret": self.secret}

    def received(self, path: str) -> bytes | None:
        """The body of the last verified delivery of feed file ``path``."""
        for delivery in reversed(self.deliveries):
            if delivery.verified and delivery.headers.get("omnium-path") == path:
                return delivery.body
        return None

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()


# --- hosts that misbehave -----------------------------------------------------------------


class MisbehavingHost:
    """Accepts TCP connections on loopback and hands each to ``serve`` in a thread."""

    def __init__(self):
        self._listener = socket.create_server((LOOPBACK, 0))
        self.port = self._listener.getsockname()[1]
        self.stopped = threading.Event()
        self._connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._connections.append(conn)
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.stopped.set()
        self._listener.close()
        for conn in self._connections:
            conn.close()


class SilentHost(MisbehavingHost):
    """Accepts and never says a word (nor reads)."""

    def serve(self, conn: socket.socket) -> None:
        self.stopped.wait()


class TricklingHost(MisbehavingHost):
    """Accepts and sends one byte a second of a line that never ends: every single read
    succeeds, so no per-read timeout ever fires."""

    def serve(self, conn: socket.socket) -> None:
        pattern = b"220-omnium trickle "
        sent = 0
        while not self.stopped.is_set():
            try:
                conn.sendall(pattern[sent % len(pattern) :][:1])
            except OSError:
                return
            sent += 1
            self.stopped.wait(1.0)
