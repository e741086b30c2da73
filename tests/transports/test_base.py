"""The shared pieces: config validation, safe paths, the deadline, the registry."""

from __future__ import annotations

import posixpath
import socket
import threading
import time

import pytest

from devtools.loopback.hosts import SilentHost
from devtools.loopback.servers import LOOPBACK
from omnium.transports.base import (
    Deadline,
    Receipt,
    Setting,
    Transport,
    TransportError,
    is_temporary_name,
    join_remote,
    temporary_name,
    validate,
)
from omnium.transports.registry import TRANSPORTS, choices

SCHEMA = {
    "host": Setting(str, required=True),
    "port": Setting(int, default=22, minimum=1, maximum=65535),
    "timeout": Setting(float, minimum=0.1),
    "tls": Setting(bool),
    "style": Setting(str, choices=("path", "virtual")),
    "url": Setting(str, check=lambda v: None if v.startswith("https://") else "must start with https://"),
}


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({}, "host is required"),
        ({"host": ""}, "host is required"),
        ({"host": "h", "port": 0}, "port must be an integer between 1 and 65535"),
        ({"host": "h", "port": "22"}, "port must be an integer between 1 and 65535"),
        ({"host": "h", "port": True}, "port must be an integer between 1 and 65535"),
        ({"host": "h", "timeout": 0}, "timeout must be a number of at least 0.1"),
        ({"host": "h", "tls": "yes"}, "tls must be true or false"),
        ({"host": "h", "style": "dns"}, "style must be one of: path, virtual"),
        ({"host": "h", "url": "http://x"}, "url must start with https://"),
        ({"host": "h", "colour": "red"}, "unknown setting 'colour'"),
    ],
)
def test_validator_names_each_problem(config, problem):
    assert validate(SCHEMA, config) == [problem]


def test_valid_config_has_no_problems():
    assert validate(SCHEMA, {"host": "h", "port": 2222, "timeout": 1, "tls": True}) == []


def test_transport_refuses_an_invalid_config_permanently():
    with pytest.raises(TransportError, match="bucket is required") as failure:
        TRANSPORTS["s3"]({"region": "eu-west-1"}, {"access_key": "a", "secret_key": "b"})

    assert failure.value.permanent


@pytest.mark.parametrize("path", ["", "/etc/passwd", "../up.json", "a//b.json", "a/./b.json", "a\r\nDELE x"])
def test_unsafe_feed_paths_are_refused(path):
    with pytest.raises(TransportError) as failure:
        join_remote("feeds", path)

    assert failure.value.permanent


def test_feed_path_goes_below_the_base():
    assert join_remote("/srv/feeds", "games/medals.json") == "/srv/feeds/games/medals.json"
    assert join_remote("", "medals.json") == "medals.json"


def test_only_names_of_our_temporary_shape_count_as_ours():
    ours = posixpath.basename(temporary_name("games/x/medals.json"))
    others = ["medals.json", ".medals.json.swp", "medals.json.tmp", ".medals.json.tmp",
              f".medals.json.{'g' * 12}.tmp", ".medals.json.abc.tmp", f"medals.json.{'a' * 12}.tmp"]

    assert is_temporary_name(ours)
    assert not any(is_temporary_name(name) for name in others)


def test_deadline_cuts_a_blocked_read():
    host = SilentHost()
    started = time.monotonic()
    try:
        with pytest.raises(TransportError, match="deadline exceeded after 0.5 s"), Deadline(0.5):
            sock = socket.create_connection((LOOPBACK, host.port))
            sock.settimeout(30)  # a library's read timeout, far too long
            assert sock.recv(1) == b""  # woken by the cut, not by the timeout
            raise ConnectionError("peer closed")
    finally:
        host.stop()
    assert time.monotonic() - started < 1.5


def test_no_new_socket_after_the_deadline():
    with pytest.raises(TransportError, match="deadline exceeded"), Deadline(0.05):
        time.sleep(0.1)
        socket.socket()


def test_a_send_whose_deadline_fired_fails_even_when_the_library_returned():
    class ReturnsAfterTheCut(Transport):
        kind = "late"

        def push(self, file, deadline):
            time.sleep(0.8)  # a library that took the cut for a clean end of the reply
            return Receipt("200 sha256:of-an-empty-reply")

    late = ReturnsAfterTheCut({"send_timeout": 0.5}, {})

    with pytest.raises(TransportError, match="deadline exceeded after 0.5 s") as failure:
        late.send(b"{}", "a.json", content_type="application/json", version=1, etag="e")

    assert not failure.value.permanent


def test_a_send_that_outlived_its_deadline_fails_though_the_watchdog_had_not_woken_yet(monkeypatch):
    """On a busy machine the watchdog's thread can wake late; the deadline has passed anyway."""
    from omnium.transports import deadline
    from omnium.transports.watchdog import Watch

    class WakesTooLate:  # the watchdog's thread, descheduled past the deadline
        def watch(self, seconds, action):
            return Watch(time.monotonic() + seconds, action)

    class Slow(Transport):
        kind = "slow"

        def push(self, file, deadline):
            time.sleep(0.6)
            return Receipt("200 in the end")

    monkeypatch.setattr(deadline, "watchdog", WakesTooLate())
    with pytest.raises(TransportError, match="deadline exceeded after 0.5 s"):
        Slow({"send_timeout": 0.5}, {}).send(b"{}", "a.json", content_type="application/json", version=1, etag="e")


def test_unexpected_error_becomes_transient():
    class Broken(Transport):
        kind = "broken"

        def push(self, file, deadline):
            raise KeyError("surprise")

    with pytest.raises(TransportError, match="KeyError") as failure:
        Broken({}, {}).send(b"", "a.json", content_type="text/plain", version=1, etag="e")

    assert not failure.value.permanent


def test_cut_stops_a_send_in_progress_from_another_thread():
    host = SilentHost()

    class Waiting(Transport):
        kind = "waiting"

        def push(self, file, deadline):
            sock = socket.create_connection((LOOPBACK, host.port))
            sock.settimeout(30)
            sock.recv(1)
            raise ConnectionError("peer closed")

    transport = Waiting({}, {})
    threading.Timer(0.3, transport.cut).start()
    started = time.monotonic()
    try:
        with pytest.raises(TransportError) as failure:
            transport.send(b"", "a.json", content_type="text/plain", version=1, etag="e")
    finally:
        host.stop()

    assert not failure.value.permanent
    assert time.monotonic() - started < 1.5


def test_registry_holds_every_transport_under_its_kind():
    for kind, transport in TRANSPORTS.items():
        assert issubclass(transport, Transport)
        assert transport.kind == kind
        assert {"connect_timeout", "send_timeout"} <= set(transport.config_schema)

    assert [kind for kind, _ in choices()] == ["s3", "sftp", "ftp", "webhook", "redis", "amqp", "azure_blob"]
    assert all(label for _, label in choices())
