"""FTP beyond the contract: FTPS with a trusted certificate, active mode, and no leftovers."""

from __future__ import annotations

import socket
import threading

import pytest
from pyftpdlib.authorizers import DummyAuthorizer
from pyftpdlib.handlers import FTPHandler
from pyftpdlib.servers import FTPServer as PyftpdlibServer

from devtools.loopback.servers import FTPServer
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


def test_active_mode_delivers(ftp_kit):
    path = feed_path()

    ftp_kit.send(ftp_kit.transport(passive=False), b'{"active": 1}', path)

    assert ftp_kit.read_back(path) == b'{"active": 1}'


class RacedToTheDataPort(FTPHandler):
    """A real FTP server (pyftpdlib) on a network where someone else, at 127.0.0.2, connects to
    the data port our PORT command announces a moment before the server itself does."""

    intruders: list[socket.socket] = []

    def ftp_PORT(self, line):
        numbers = [int(n) for n in line.split(",")]
        announced = (".".join(map(str, numbers[:4])), numbers[4] * 256 + numbers[5])
        self.intruders.append(socket.create_connection(announced, timeout=5, source_address=("127.0.0.2", 0)))
        return super().ftp_PORT(line)


def everything_sent_to(intruder: socket.socket) -> bytes:
    """What arrives until the connection is closed (a reset: a connection never taken)."""
    received = b""
    with intruder:
        try:
            while chunk := intruder.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
    return received


@pytest.fixture
def raced_server(tmp_path):
    authorizer = DummyAuthorizer()
    authorizer.add_user("omnium", "secret", str(tmp_path), perm="elradfmwMT")
    RacedToTheDataPort.authorizer, RacedToTheDataPort.intruders = authorizer, []
    server = PyftpdlibServer(("127.0.0.1", 0), RacedToTheDataPort)
    serving = threading.Thread(target=server.serve_forever, kwargs={"timeout": 0.1, "handle_exit": False})
    serving.start()
    yield FTPServer(server.address[1], "omnium", "secret", tmp_path, process=None)
    server.close_all()
    serving.join(5)


def test_in_active_mode_a_data_connection_from_another_address_gets_nothing(raced_server):
    kit = FTPKit(raced_server)

    with pytest.raises(TransportError, match="came from 127.0.0.2, not from the server 127.0.0.1"):
        kit.send(kit.transport(passive=False), b'{"for": "the server only"}', feed_path())

    # One race for the folder listing before the upload, one for the upload itself.
    assert RacedToTheDataPort.intruders
    assert all(everything_sent_to(intruder) == b"" for intruder in RacedToTheDataPort.intruders)
    kit.close()
