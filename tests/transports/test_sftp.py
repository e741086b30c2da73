"""SFTP beyond the contract: the pinned host key, and a server frozen mid-upload."""

from __future__ import annotations

import os
import signal
import stat
import threading
import time

import pytest

from devtools.loopback.servers import freeze, other_host_keys, thaw
from devtools.waiting import wait_until
from omnium.transports import TransportError

from .kits import age_by_an_hour, cut_mid_upload, feed_path, growing_temporary_file, leftovers_beside

SEND_TIMEOUT = 3.0
SLACK = 2.0

pytestmark = pytest.mark.servers


@pytest.mark.parametrize("pinned", ["changed", "unknown"])
def test_host_key_we_did_not_pin_is_permanent(sftp_kit, pinned):
    transport = sftp_kit.transport(host_key=other_host_keys()[pinned])

    with pytest.raises(TransportError, match=f"host key .* {pinned}") as failure:
        sftp_kit.send(transport, b"{}", feed_path())

    assert failure.value.permanent
    assert "changed" in str(failure.value) or "unknown" in str(failure.value)


def test_password_the_server_refuses_is_permanent(sftp_kit):
    transport = sftp_kit.transport(credentials={"password": "not-the-password"})

    with pytest.raises(TransportError) as failure:
        sftp_kit.send(transport, b"{}", feed_path())

    assert failure.value.permanent


def test_upload_leaves_only_the_final_file(sftp_kit, sftp_server):
    path = feed_path()

    sftp_kit.send(sftp_kit.transport(), b'{"ok": true}', path)

    folder = (sftp_server.root / path).parent
    assert [entry.name for entry in folder.iterdir()] == ["medals.json"]


def test_sends_share_one_session_and_one_the_server_dropped_is_replaced(sftp_kit, sftp_server):
    transport, path = sftp_kit.transport(), feed_path()
    before = set(sftp_server.session_pids())
    sftp_kit.send(transport, b'{"n": 1}', path)
    ours = set(sftp_server.session_pids()) - before

    sftp_kit.send(transport, b'{"n": 2}', path)

    assert ours and set(sftp_server.session_pids()) - before == ours, "the second send used the open session"
    for pid in ours:  # the server drops the idle session, as a restart or an idle timeout would
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not ours & set(sftp_server.session_pids()), 5, message="the server dropped our session")

    sftp_kit.send(transport, b'{"n": 3}', path)

    assert sftp_kit.read_back(path) == b'{"n": 3}'


def test_server_frozen_mid_upload_fails_within_deadline(sftp_kit, sftp_server):
    transport, path = sftp_kit.transport(send_timeout=SEND_TIMEOUT), feed_path()
    body = os.urandom(20_000_000)
    outcome = {}
    sender = threading.Thread(target=_send_and_time, args=(sftp_kit, transport, body, path, outcome))

    sender.start()
    temporary = growing_temporary_file(sftp_server.root / path)
    frozen = sftp_server.session_pids()
    freeze(frozen)
    try:
        uploaded = temporary.stat().st_size
        sender.join(SEND_TIMEOUT + SLACK + 5)
    finally:
        thaw(frozen)

    assert 0 < uploaded < len(body), "the server must be frozen mid-upload"
    assert isinstance(outcome.get("error"), TransportError), outcome
    assert not outcome["error"].permanent
    assert "deadline exceeded" in str(outcome["error"])
    assert outcome["elapsed"] < SEND_TIMEOUT + SLACK
    assert not (sftp_server.root / path).exists(), "no partial file under the final name"


def _send_and_time(kit, transport, body, path, outcome) -> None:
    started = time.monotonic()
    try:
        kit.send(transport, body, path)
    except TransportError as error:
        outcome["error"] = error
    outcome["elapsed"] = time.monotonic() - started




def test_next_connection_removes_the_temporary_file_a_cut_send_left(sftp_kit, sftp_server):
    path = feed_path()
    final = sftp_server.root / path
    left_by_the_cut = cut_mid_upload(sftp_kit, sftp_server.root, path)
    age_by_an_hour(left_by_the_cut)  # long past the send deadline: that send has surely ended
    kept = leftovers_beside(final)

    sftp_kit.send(sftp_kit.transport(), b'{"n": 2}', path)  # a new transport: the next connection

    assert not left_by_the_cut.exists()
    assert sorted(p.name for p in final.parent.iterdir()) == sorted(["medals.json", *(f.name for f in kept.values())])
    assert final.read_bytes() == b'{"n": 2}'


@pytest.mark.parametrize("mode", ["640", "0604"])
def test_a_chosen_file_mode_is_the_files_from_its_first_moment(sftp_kit, sftp_server, mode):
    """Issue 33: some servers want a file mode after upload. It is set on the temporary file,
    so the file never shows under its final name with other permissions."""
    path = feed_path()

    sftp_kit.send(sftp_kit.transport(file_mode=mode), b'{"mode": 1}', path)

    assert stat.S_IMODE((sftp_server.root / path).stat().st_mode) == int(mode, 8)


def test_a_file_mode_that_is_not_octal_is_refused_plainly(sftp_kit):
    with pytest.raises(TransportError, match="file_mode must be an octal mode such as 644"):
        sftp_kit.transport(file_mode="rw-r--r--")


def test_while_the_server_rotates_its_host_key_either_pinned_key_is_accepted(sftp_kit, sftp_server):
    """Issue 33: two keys pinned at once, the new one confirmed before the old is dropped."""
    real, other = sftp_server.host_key.strip(), other_host_keys()
    moved_on = sftp_kit.transport(host_key=other["changed"], next_host_key=real)  # the server has the new key
    not_yet = sftp_kit.transport(host_key=real, next_host_key=other["unknown"])  # still the old one
    path = feed_path()

    sftp_kit.send(moved_on, b'{"rotated": 1}', path)
    assert sftp_kit.read_back(path) == b'{"rotated": 1}'
    sftp_kit.send(not_yet, b'{"rotated": 2}', path)
    assert sftp_kit.read_back(path) == b'{"rotated": 2}'

    neither = sftp_kit.transport(host_key=other["changed"], next_host_key=other["unknown"])
    with pytest.raises(TransportError, match="host key") as refused:
        sftp_kit.send(neither, b"{}", feed_path())
    assert refused.value.permanent
