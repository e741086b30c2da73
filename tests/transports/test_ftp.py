"""FTP beyond the contract: FTPS with a trusted certificate, and no leftovers."""

from __future__ import annotations

import pytest

from omnium.transports import TransportError

from .kits import FTPKit, age_by_an_hour, feed_path, left_by_a_killed_sender, leftovers_beside

pytestmark = pytest.mark.servers


def test_ftps_delivers_with_a_trusted_certificate(ftps_server):
    kit = FTPKit(ftps_server)
    path = feed_path()

    receipt = kit.send(kit.transport(tls=True, ca_cert=ftps_server.ca_cert), b'{"tls": 1}', path)

    assert kit.read_back(path) == b'{"tls": 1}'
    assert receipt.remote_bytes == 10
    kit.close()


def test_ftps_untrusted_certificate_is_permanent(ftps_server):
    kit = FTPKit(ftps_server)

    with pytest.raises(TransportError, match="certificate") as failure:
        kit.send(kit.transport(tls=True), b"{}", feed_path())

    assert failure.value.permanent
    kit.close()


def test_upload_leaves_only_the_final_file(ftp_kit, ftp_server):
    path = feed_path()

    ftp_kit.send(ftp_kit.transport(), b'{"ok": true}', path)

    folder = (ftp_server.root / path).parent
    assert [entry.name for entry in folder.iterdir()] == ["medals.json"]


def test_next_connection_removes_the_temporary_file_a_killed_sender_left(ftp_kit, ftp_server):
    path = feed_path()
    final = ftp_server.root / path
    left_by_the_cut = left_by_a_killed_sender(ftp_server.root, path)
    age_by_an_hour(left_by_the_cut)  # long past the send deadline: that send has surely ended
    kept = leftovers_beside(final)

    ftp_kit.send(ftp_kit.transport(), b'{"n": 2}', path)  # a new transport: the next connection

    assert not left_by_the_cut.exists()
    assert sorted(p.name for p in final.parent.iterdir()) == sorted(["medals.json", *(f.name for f in kept.values())])
    assert final.read_bytes() == b'{"n": 2}'
