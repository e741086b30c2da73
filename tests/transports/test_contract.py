"""The transport contract, written once and run against every kind on a real server."""

from __future__ import annotations

import os
import re
import threading
import time

import pytest

from devtools.processes import free_port
from omnium.transports import TransportError

from .kits import feed_path, next_version

# Small enough to keep the run short, large enough to be far above one read's timeout.
SEND_TIMEOUT = 1.5
SLACK = 2.0
# connect_timeout above the trickle's pause (fixtures.TRICKLE_S), so only the deadline stops a trickle.
QUICK = {"connect_timeout": 1.0, "send_timeout": SEND_TIMEOUT}


def test_file_arrives_byte_identical(kit):
    body = os.urandom(200_000)  # not UTF-8, not JSON: the bytes must pass untouched
    path = feed_path()

    kit.send(kit.transport(), body, path)

    assert kit.read_back(path) == body


def test_receipt_says_what_landed(kit):
    body, path = b'{"medals": [1, 2, 3]}', feed_path()

    receipt = kit.send(kit.transport(), body, path)

    assert re.fullmatch(kit.receipt_pattern(body, path), receipt.text), receipt.text
    assert receipt.remote_bytes is None or receipt.remote_bytes > 0


def test_new_version_replaces_old(kit):
    transport, path = kit.transport(), feed_path()
    kit.send(transport, b'{"v": 1, "padding": "' + b"x" * 5000 + b'"}', path)

    kit.send(transport, b'{"v": 2}', path)

    assert kit.read_back(path) == b'{"v": 2}'


def test_bad_credentials_fail_permanently(kit):
    transport = kit.transport(credentials=kit.bad_credentials())

    with pytest.raises(TransportError) as failure:
        kit.send(transport, b"{}", feed_path())

    assert failure.value.permanent, str(failure.value)


def test_refused_connection_is_transient(kit):
    transport = kit.transport(**kit.aimed_at(free_port()), **QUICK)

    with pytest.raises(TransportError) as failure:
        kit.send(transport, b"{}", feed_path())

    assert not failure.value.permanent, str(failure.value)


def test_silent_host_fails_transient_within_deadline(kit, silent_host):
    transport = kit.transport(**kit.aimed_at(silent_host.port), **QUICK)

    failure, elapsed = _timed_failure(kit, transport)

    assert not failure.permanent, str(failure)
    assert elapsed < SEND_TIMEOUT + SLACK


def test_trickling_host_fails_transient_within_deadline(kit, trickling_host):
    transport = kit.transport(**kit.aimed_at(trickling_host.port), **QUICK)

    failure, elapsed = _timed_failure(kit, transport)

    assert not failure.permanent, str(failure)
    assert elapsed < SEND_TIMEOUT + SLACK


def test_host_that_answers_then_trickles_fails_transient_within_deadline(kit, answering_trickler):
    # An HTTP client cut by the deadline after "200 OK" takes the cut for the end of the
    # reply: only the deadline itself can tell that this send did not land.
    transport = kit.transport(**kit.aimed_at(answering_trickler.port), **QUICK)

    failure, elapsed = _timed_failure(kit, transport)

    assert not failure.permanent, str(failure)
    assert elapsed < SEND_TIMEOUT + SLACK


def test_readers_never_see_a_partial_file(kit):
    transport, path = kit.transport(), feed_path()
    first, second = os.urandom(6_000_000), os.urandom(6_000_000)

    seen_while_new = _watch_while(kit, path, lambda: kit.send(transport, first, path))
    seen_while_replaced = _watch_while(kit, path, lambda: kit.send(transport, second, path))

    assert seen_while_new <= {None, first}, "a reader saw part of a new file"
    assert seen_while_replaced <= {first, second}, "a reader saw part of a replacement"
    assert kit.read_back(path) == second


def _timed_failure(kit, transport) -> tuple[TransportError, float]:
    started = time.monotonic()
    with pytest.raises(TransportError) as failure:
        kit.send(transport, os.urandom(100_000), feed_path(), version=next_version())
    return failure.value, time.monotonic() - started


def _watch_while(kit, path, send) -> set:
    """Every distinct content a reader found at ``path`` while ``send`` ran."""
    seen, done = set(), threading.Event()

    def reader():
        while not done.is_set():
            seen.add(kit.read_back(path))

    watcher = threading.Thread(target=reader)
    watcher.start()
    try:
        send()
    finally:
        done.set()
        watcher.join()
    return seen


def _feed_files(bodies_and_paths):
    from omnium.transports.base import FeedFile

    return [FeedFile(body, path, "application/json", next_version(), f"e{n}")
            for n, (body, path) in enumerate(bodies_and_paths)]


def test_send_many_lands_each_file_and_says_which_failed(kit):
    """Every transport takes several files in one call: one push for those that take several
    (Redis), one by one for the others, which stop at the first failure."""
    first, second, after = (os.urandom(3_000), feed_path()), (b"{}", "../outside.json"), (b'{"z": 1}', feed_path())

    outcomes = kit.transport().send_many(_feed_files([first, second, after]))

    assert not isinstance(outcomes[0], TransportError) and kit.read_back(first[1]) == first[0]
    assert isinstance(outcomes[1], TransportError) and outcomes[1].permanent, "a path that climbs out is refused"
    assert len(outcomes) in (2, 3)
    if len(outcomes) == 3:  # a transport that pushes them together still lands the others
        assert not isinstance(outcomes[2], TransportError) and kit.read_back(after[1]) == after[0]
    else:
        assert kit.read_back(after[1]) is None, "stopped at the failure"


def test_send_many_to_a_silent_host_fails_within_deadline(kit, silent_host):
    transport = kit.transport(**kit.aimed_at(silent_host.port), **QUICK)
    started = time.monotonic()

    outcomes = transport.send_many(_feed_files([(b"{}", feed_path()), (b"[]", feed_path())]))

    assert outcomes and all(isinstance(o, TransportError) and not o.permanent for o in outcomes)
    assert time.monotonic() - started < SEND_TIMEOUT + SLACK
