"""In-process hosts for the transport tests: a webhook receiver that checks signatures,
and hosts that accept connections and then misbehave (silent, trickling)."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from devtools.loopback.servers import LOOPBACK
from omnium.transports.webhook import file_headers_signed, verify_signature

# --- webhook receiver ---------------------------------------------------------------------


class LoopbackHTTPServer(ThreadingHTTPServer):
    # http.server listens with a backlog of 5: a burst of senders (a 500-way fan-out from 32
    # threads) overflows it and the kernel drops connections, which the clients retry only
    # after a second. A real receiver listens with a deep backlog.
    request_queue_size = 512
    daemon_threads = True


def serve_http(handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None) -> LoopbackHTTPServer:
    """An HTTP server on a free loopback port (HTTPS with a server-side ``tls`` context), serving
    in a daemon thread; `shutdown()` and `server_close()` end it."""
    server = LoopbackHTTPServer((LOOPBACK, 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    # shutdown() waits for the serving loop's next poll: socketserver's default half second
    # was a half second at the end of every test with a receiver.
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
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


class HoldingReceiver:
    """Answers every POST after `hold_s` (sooner once `release` is set), and counts requests in
    flight per URL path (two at once on one path: two senders for one destination)."""

    def __init__(self, hold_s: float):
        self.hold_s, self.lock, self.release = hold_s, threading.Lock(), threading.Event()
        self.in_flight, self.max_in_flight, self.received = {}, {}, []
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self):
                self.read_body()
                receiver._enter(self.path)
                receiver.release.wait(receiver.hold_s)
                receiver._leave(self.path)
                self.answer()

        self.http = serve_http(Handler)

    def url(self, path: str) -> str:
        return f"http://{LOOPBACK}:{self.http.server_address[1]}/{path}"

    @property
    def port(self) -> int:
        return self.http.server_address[1]

    def _enter(self, path):
        with self.lock:
            self.in_flight[path] = self.in_flight.get(path, 0) + 1
            self.max_in_flight[path] = max(self.max_in_flight.get(path, 0), self.in_flight[path])
            self.received.append((path, time.monotonic()))

    def _leave(self, path):
        with self.lock:
            self.in_flight[path] -= 1

    def stop(self):
        self.http.shutdown()
        self.http.server_close()


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool
    status: int = 200  # what the receiver answered
    received_at: float = 0.0  # time.time()
    client_certificate: dict | None = None  # over HTTPS: the sender's certificate, as ssl reads it


@dataclass
class WebhookReceiver:
    """Records every POST, checks its signature with ``verify_signature`` and a feed file's
    omnium-version and omnium-path against the signed id (401 when either fails), and
    answers with ``replies`` in order, then 200 (or the status of ``refuse`` while it lasts).
    ``keep_bodies=False`` records headers only: a long benchmark would otherwise hold every
    3 MB calendar it was sent."""

    secret: str
    deliveries: list[Delivery] = field(default_factory=list)
    replies: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    keep_bodies: bool = True
    # HTTPS: a server-side context (its certificate, and whether it asks for a client's).
    tls: ssl.SSLContext | None = None
    _refusal: tuple[int, float] = (200, 0.0)  # (status, until time.monotonic())

    def refuse(self, status: int, seconds: float) -> None:
        """Answer every POST with `status` for the next `seconds` (a client mid-deploy), then 200."""
        self._refusal = (status, time.monotonic() + seconds)

    def _scripted_reply(self) -> tuple[int, dict[str, str]]:
        if self.replies:
            return self.replies.pop(0)
        status, until = self._refusal
        return (status, {}) if time.monotonic() < until else (200, {})

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = self.read_body()
                headers = dict(self.headers.items())
                verified = verify_signature(receiver.secret, headers, body)
                if any(name.lower() == "omnium-version" for name in headers):  # a feed file, not an event
                    verified = verified and file_headers_signed(headers)
                status, extra = receiver._scripted_reply()
                status = status if verified else 401
                peer = self.connection.getpeercert() if receiver.tls is not None else None
                receiver.deliveries.append(Delivery(self.path, headers, body if receiver.keep_bodies else b"",
                                                    verified, status, time.time(), peer))
                self.answer(status, f"received {status}".encode(), extra)

        self.http = serve_http(Handler, self.tls)
        return self

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{LOOPBACK}:{self.http.server_address[1]}/feeds"

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
    """Accepts TCP connections on loopback and hands each to ``serve`` in a thread.
    ``trickle_s``: the pause between the bytes of a trickling host (a second, as a slow host
    would; tests use less, keeping it below every per-read timeout they set)."""

    def __init__(self, trickle_s: float = 1.0):
        self.trickle_s = trickle_s
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
        _trickle(conn, b"220-omnium trickle ", self.stopped, self.trickle_s)


class AnswerThenTrickleHost(MisbehavingHost):
    """Sends a valid first line (an HTTP status line, an FTP or SSH greeting, a Redis reply),
    then one byte a second of a line that never ends. A client that takes the cut at its
    deadline for the end of the reply would report a success that never happened.

    ``after_request``: wait for the client to speak first (HTTP, Redis), as a server would.
    The host reads and drops all the client sends, so an upload never blocks on it."""

    def __init__(self, first_line: bytes, *, after_request: bool, trickle_s: float = 1.0):
        self.first_line = first_line
        self.after_request = after_request
        super().__init__(trickle_s)

    def serve(self, conn: socket.socket) -> None:
        spoke = threading.Event()
        threading.Thread(target=_drop_what_arrives, args=(conn, spoke), daemon=True).start()
        while self.after_request and not spoke.wait(0.05):
            if self.stopped.is_set():
                return
        try:
            conn.sendall(self.first_line)
        except OSError:
            return
        _trickle(conn, b"x-omnium-trickle: ", self.stopped, self.trickle_s)


class ScriptedReplyHost(MisbehavingHost):
    """Reads one whole HTTP request, writes ``reply`` byte for byte (whole, or cut short) and
    closes the connection."""

    def __init__(self, reply: bytes):
        self.reply = reply
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                _read_http_request(conn)
                conn.sendall(self.reply)
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                pass


def _drop_what_arrives(conn: socket.socket, spoke: threading.Event) -> None:
    try:
        while conn.recv(65536):
            spoke.set()
    except OSError:
        pass


def _trickle(conn: socket.socket, pattern: bytes, stopped: threading.Event, pause_s: float) -> None:
    sent = 0
    while not stopped.is_set():
        try:
            conn.sendall(pattern[sent % len(pattern) :][:1])
        except OSError:
            return
        sent += 1
        stopped.wait(pause_s)


def _read_http_request(conn: socket.socket) -> None:
    """Read up to the end of the request's body (its Content-Length)."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = conn.recv(65536)
        if not chunk:
            return
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lengths = [line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    remaining = int(lengths[0]) - len(body) if lengths else 0
    while remaining > 0:
        chunk = conn.recv(min(remaining, 65536))
        if not chunk:
            return
        remaining -= len(chunk)


# --- a slow link ---------------------------------------------------------------------------


class BatchingLink:
    """A TCP forwarder on a loopback port to `target_port`, whose answers reach the client in
    batches: what the server sends is held `hold_s` and handed over with whatever followed it
    meanwhile, as a busy client or a congested network would read it. A reply and the
    messages right behind it then arrive in one receive (client to server goes straight on)."""

    def __init__(self, target_port: int, hold_s: float = 0.05):
        self.target_port, self.hold_s = target_port, hold_s
        self.listener = socket.create_server((LOOPBACK, 0))
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
                server = socket.create_connection((LOOPBACK, self.target_port))
            except OSError:
                return
            self.connections += [client, server]
            threading.Thread(target=_pipe, args=(client, server, 0), daemon=True).start()
            threading.Thread(target=_pipe, args=(server, client, self.hold_s), daemon=True).start()

    def stop(self) -> None:
        self.stopped.set()
        for sock in [self.listener, *self.connections]:
            sock.close()


def _pipe(source: socket.socket, sink: socket.socket, hold_s: float) -> None:
    """Copy `source` to `sink`; with `hold_s`, each batch as one write after that pause."""
    try:
        while data := source.recv(65536):
            if hold_s:
                time.sleep(hold_s)
                data += _what_has_arrived(source)
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            sock.close()


def _what_has_arrived(sock: socket.socket) -> bytes:
    arrived = b""
    while True:
        try:
            chunk = sock.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return arrived
        if not chunk:
            return arrived
        arrived += chunk


class MovingEndpoint(MisbehavingHost):
    """A managed service's endpoint (ElastiCache's primary endpoint, a cloud load balancer):
    one fixed address that forwards each new connection to whichever server is behind it now.
    ``move_to`` changes that for new connections only: those already open stay where they
    were, as TCP connections to a name whose DNS record moved do."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        super().__init__()

    def move_to(self, target_port: int) -> None:
        self.target_port = target_port

    def serve(self, conn: socket.socket) -> None:
        try:
            upstream = socket.create_connection((LOOPBACK, self.target_port), timeout=5)
        except OSError:
            conn.close()
            return
        self._connections.append(upstream)
        threading.Thread(target=_pump, args=(upstream, conn), daemon=True).start()
        _pump(conn, upstream)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes from ``source`` to ``sink`` until either side ends, then end both."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    for sock in (source, sink):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
