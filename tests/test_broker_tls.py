"""amqps:// checks the broker's certificate and host name (issue 31: py-amqp's bare ssl=True
turns the name check off). Each case starts a process with the settings of a production host
and connects through Celery's own connection to a loopback TLS listener whose certificate
names some other host, or this one."""

import socket
import ssl
import subprocess
import sys
import threading

import pytest
from django.conf import settings

from devtools.loopback.servers import write_self_signed
from tests.test_settings import PRODUCTION

CONNECT = ("import django; django.setup(); from omnium.celery import app\n"
           "try:\n"
           "    app.connection_for_write().connect()\n"
           "except Exception as exc:\n"
           "    print(type(exc).__name__, exc)\n")


@pytest.fixture
def tls_listener(tmp_path):
    """listen(names) -> (port, CA file): a TLS server whose certificate names `names`; each
    connection completes its handshake (or not) and is closed."""
    sockets = []

    def listen(names: tuple[str, ...]):
        ca_pem = write_self_signed(tmp_path, names)
        (tmp_path / "ca.pem").write_text(ca_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
        server = socket.create_server(("127.0.0.1", 0))
        sockets.append(server)

        def serve():
            while True:
                try:
                    connection, _ = server.accept()
                except OSError:
                    return
                try:
                    with context.wrap_socket(connection, server_side=True):
                        pass
                except (ssl.SSLError, OSError):
                    connection.close()

        threading.Thread(target=serve, daemon=True).start()
        return server.getsockname()[1], str(tmp_path / "ca.pem")

    yield listen
    for server in sockets:
        server.close()


def connect_as_production(port: int, ca_file: str) -> str:
    environment = {**PRODUCTION, "DJANGO_SETTINGS_MODULE": "omnium.settings",
                   "CELERY_BROKER_URL": f"amqps://guest:guest@127.0.0.1:{port}//", "OMNIUM_BROKER_CA_FILE": ca_file}
    finished = subprocess.run([sys.executable, "-c", CONNECT], env=environment, cwd=settings.BASE_DIR,
                              capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    return finished.stdout


def test_a_broker_whose_certificate_names_another_host_is_refused(tls_listener):
    port, ca_file = tls_listener(("broker.example.net",))
    failure = connect_as_production(port, ca_file)
    assert "SSLCertVerificationError" in failure and "mismatch" in failure, failure


def test_a_broker_whose_certificate_names_its_host_gets_past_the_handshake(tls_listener):
    port, ca_file = tls_listener(("127.0.0.1",))
    failure = connect_as_production(port, ca_file)
    assert failure and "SSLCertVerificationError" not in failure and "certificate" not in failure, failure
