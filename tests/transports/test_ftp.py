"""FTP beyond the contract: FTPS with a trusted certificate, and no leftovers."""

from __future__ import annotations

import pytest

from omnium.transports import TransportError

from .kits import FTPKit, feed_path

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
