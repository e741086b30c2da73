"""Real server processes on loopback, each started on free ports.

S3 is SeaweedFS (`weed mini`), and moto's server where a test needs STS, IAM and KMS too; Azure
Blob Storage is Azurite, SFTP is OpenSSH's sshd, FTP is pyftpdlib; all run as separate processes
installed by scripts/test-servers/install.sh. (The webhook receiver and the
misbehaving hosts are threads in the test process: see hosts.py.)
"""

from __future__ import annotations

import getpass
import ipaddress
import json
import os
import shutil
import signal
import socket
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import botocore.config
import requests
from azure.storage.blob import BlobServiceClient
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from cryptography.x509.oid import NameOID

from devtools.processes import LOOPBACK, ManagedProcess, free_port, free_ports

INSTALL_HINT = "run scripts/test-servers/install.sh first"
VENV_BIN = Path(sys.executable).parent


def find_program(name: str, *places: Path) -> str:
    for place in places:
        if (place / name).exists():
            return str(place / name)
    found = shutil.which(name)
    if not found:
        raise RuntimeError(f"{name} is not installed: {INSTALL_HINT}")
    return found


def server_process(name: str, argv: list[str], workdir: Path) -> ManagedProcess:
    """A server subprocess run from `workdir`, its output in `workdir/<name>.log`."""
    return ManagedProcess(argv, name, log_dir=workdir, cwd=workdir)


def greets_with(port: int, prefix: bytes) -> bool:
    with socket.create_connection((LOOPBACK, port), timeout=2) as sock:
        return sock.recv(64).startswith(prefix)


# --- S3: SeaweedFS -------------------------------------------------------------------------


@dataclass
class S3Server:
    endpoint_url: str
    bucket: str
    access_key: str
    secret_key: str
    process: ManagedProcess
    # A second identity that may read and list but not write: a read-only destination.
    reader_access_key: str = "omnium-test-reader"
    reader_secret_key: str = "omnium-test-reader-secret-0123"

    def destination_config(self, prefix: str) -> dict:
        """An S3 destination's config aimed at this server, under `prefix`."""
        return {"endpoint_url": self.endpoint_url, "bucket": self.bucket, "prefix": prefix,
                "addressing_style": "path"}

    def credentials(self) -> dict:
        return {"access_key": self.access_key, "secret_key": self.secret_key}


def start_s3(workdir: Path) -> S3Server:
    weed = find_program("weed", VENV_BIN)
    access_key, secret_key, bucket = "omnium-test", "omnium-test-secret-0123456789", "feeds"
    identities = {
        "identities": [
            {
                "name": "omnium",
                "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            },
            {
                "name": "omnium-reader",
                "credentials": [{"accessKey": S3Server.reader_access_key,
                                 "secretKey": S3Server.reader_secret_key}],
                "actions": ["Read", "List"],
            },
        ]
    }
    (workdir / "s3.json").write_text(json.dumps(identities))
    ports = dict(zip(WEED_PORTS, free_ports(len(WEED_PORTS)), strict=True))
    process = server_process("seaweedfs", _weed_argv(weed, workdir, ports, bucket), workdir)
    server = S3Server(f"http://{LOOPBACK}:{ports['s3.port']}", bucket, access_key, secret_key, process)
    process.wait_until(lambda: _bucket_ready(server), timeout=30)
    return server


# Every port `weed mini` would otherwise take at a fixed default number.
WEED_PORTS = [
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
    "debug.port",
]


def _weed_argv(weed: str, workdir: Path, ports: dict[str, int], bucket: str) -> list[str]:
    argv = [weed, "mini", f"-dir={workdir / 'data'}", f"-ip={LOOPBACK}", f"-ip.bind={LOOPBACK}"]
    argv += [f"-{name}={port}" for name, port in ports.items()]
    return argv + [
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-webdav=false",
        "-admin.ui=false",
        "-master.telemetry=false",  # it would report to the internet otherwise
        # Small volumes fill every few dozen 3 MB uploads, and while SeaweedFS grows new ones
        # every upload stalls for about a second. Volume files grow as written, so a larger
        # limit costs no disk until used.
        "-master.volumeSizeLimitMB=1024",
        "-s3.autoCreateBucket=false",  # a missing bucket must stay missing (a permanent error)
        f"-s3.config={workdir / 's3.json'}",
        f"-s3.localSocket={workdir / 's3.sock'}",  # the defaults are left behind in /tmp
        f"-filer.localSocket={workdir / 'filer.sock'}",
        f"-bucket={bucket}",
    ]


def _bucket_ready(server: S3Server) -> bool:
    client = boto3.session.Session().client(
        "s3",
        endpoint_url=server.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id=server.access_key,
        aws_secret_access_key=server.secret_key,
        config=botocore.config.Config(connect_timeout=1, read_timeout=2, retries={"max_attempts": 1}),
    )
    try:
        client.head_bucket(Bucket=server.bucket)
        return True
    except Exception:  # noqa: BLE001 - not up yet, whatever the reason
        return False
    finally:
        client.close()


# --- AWS with STS, IAM and KMS: moto's server ---------------------------------------------

ALLOW_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


@dataclass
class AwsServer:
    """moto's server as a small AWS account in which IAM is enforced, laid out the way a client
    gives a vendor access: a bucket, a KMS key for it, and a role that may write to the bucket,
    which a vendor user (whose own keys may do nothing else) assumes with an external id.
    ``inspector`` keys may do anything: the tests read back with them."""

    endpoint_url: str
    process: ManagedProcess
    bucket: str = "client-feeds"
    external_id: str = "omnium-games-2026"
    role_arn: str = ""
    kms_key_arn: str = ""
    vendor: tuple[str, str] = ("", "")
    inspector: tuple[str, str] = ("", "")

    def client(self, service: str, keys: tuple[str, str]):
        return boto3.session.Session().client(service, endpoint_url=self.endpoint_url, region_name="us-east-1",
                                              aws_access_key_id=keys[0], aws_secret_access_key=keys[1])

    def destination_config(self, prefix: str) -> dict:
        return {"endpoint_url": self.endpoint_url, "bucket": self.bucket, "prefix": prefix,
                "addressing_style": "path", "sts_endpoint_url": self.endpoint_url}

    def lay_out_the_account(self) -> None:
        anyone = ("AKIAIOSFODNN7EXAMPLE", "set-up-before-iam-is-enforced")
        iam, s3 = self.client("iam", anyone), self.client("s3", anyone)
        s3.create_bucket(Bucket=self.bucket)
        self.kms_key_arn = self.client("kms", anyone).create_key(Description="client bucket key")["KeyMetadata"]["Arn"]
        self.vendor = self._user(iam, "omnium-vendor", {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}]})
        self.inspector = self._user(iam, "inspector", ALLOW_ALL)
        trust = {"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:user/omnium-vendor"},
            "Action": "sts:AssumeRole", "Condition": {"StringEquals": {"sts:ExternalId": self.external_id}}}]}
        self.role_arn = iam.create_role(RoleName="omnium-delivery",
                                        AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        writes = {"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": ["s3:PutObject", "s3:DeleteObject"], "Resource": "*"}]}
        iam.put_role_policy(RoleName="omnium-delivery", PolicyName="write-feeds", PolicyDocument=json.dumps(writes))
        # From here on every request must be signed by a known key that its policies allow.
        reply = requests.post(f"{self.endpoint_url}/moto-api/reset-auth", data="0",
                              headers={"Content-Type": "text/plain"}, timeout=10)
        reply.raise_for_status()

    @staticmethod
    def _user(iam, name: str, policy: dict) -> tuple[str, str]:
        iam.create_user(UserName=name)
        iam.put_user_policy(UserName=name, PolicyName="only", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]


def start_aws(workdir: Path) -> AwsServer:
    port = free_port()
    argv = [sys.executable, "-m", "moto.server", "--host", LOOPBACK, "--port", str(port)]
    process = server_process("moto", argv, workdir)
    server = AwsServer(f"http://{LOOPBACK}:{port}", process)
    process.wait_for_port(port)
    server.lay_out_the_account()
    return server


# --- Azure Blob Storage: Azurite ----------------------------------------------------------

AZURITE_BIN = Path(__file__).resolve().parents[2] / ".tools" / "azurite" / "node_modules" / ".bin"


@dataclass
class AzuriteServer:
    """Azurite's blob service with its one development account (the emulator's published
    name and key), and a container made for the tests."""

    account_url: str
    container: str
    process: ManagedProcess
    account_name: str = "devstoreaccount1"
    account_key: str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

    def destination_config(self, prefix: str) -> dict:
        return {"account_url": self.account_url, "container": self.container, "prefix": prefix}

    def credentials(self) -> dict:
        return {"account_name": self.account_name, "account_key": self.account_key}

    def service(self) -> BlobServiceClient:
        return BlobServiceClient(self.account_url, credential={"account_name": self.account_name,
                                                               "account_key": self.account_key})


def start_azurite(workdir: Path) -> AzuriteServer:
    azurite = find_program("azurite-blob", AZURITE_BIN)
    port = free_port()
    argv = [azurite, "--blobHost", LOOPBACK, "--blobPort", str(port), "--location", str(workdir / "data"),
            "--silent", "--disableTelemetry", "--skipApiVersionCheck"]
    process = server_process("azurite", argv, workdir)
    server = AzuriteServer(f"http://{LOOPBACK}:{port}/devstoreaccount1", "feeds", process)
    process.wait_until(lambda: _container_made(server), timeout=30)
    return server


def _container_made(server: AzuriteServer) -> bool:
    try:
        with server.service() as service:
            if not service.get_container_client(server.container).exists():
                service.create_container(server.container)
        return True
    except Exception:  # noqa: BLE001 - not up yet, whatever the reason
        return False


# --- SFTP: OpenSSH sshd -----------------------------------------------------------------


@dataclass
class SSHServer:
    port: int
    username: str
    host_key: str  # "ssh-ed25519 AAAA..." as a destination pins it
    client_key: str  # the private key (OpenSSH PEM) the test user logs in with
    root: Path  # the folder uploads go to
    process: ManagedProcess

    def destination_config(self, directory: str) -> dict:
        """An SFTP destination's config aimed at this server (host key pinned), into `directory`."""
        return {"host": LOOPBACK, "port": self.port, "username": self.username, "host_key": self.host_key,
                "directory": directory}

    def credentials(self) -> dict:
        return {"private_key": self.client_key}

    def session_pids(self) -> list[int]:
        """The sshd processes serving open connections (children of the listener)."""
        return _descendants(self.process.pid)


def openssh_private_key(key) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()


def openssh_public_key(key) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )


def other_host_keys() -> dict[str, str]:
    """Keys the test server does not hold: one of its own type (a changed key) and one of
    a type it does not offer (an unknown key)."""
    return {
        "changed": openssh_public_key(ed25519.Ed25519PrivateKey.generate()),
        "unknown": openssh_public_key(rsa.generate_private_key(public_exponent=65537, key_size=2048)),
    }


def start_sshd(workdir: Path, *, read_only: bool = False) -> SSHServer:
    """sshd serving SFTP only; ``read_only``: every write is refused (permission denied)."""
    sshd = find_program("sshd", Path("/usr/sbin"))
    host_key, client_key = ed25519.Ed25519PrivateKey.generate(), ed25519.Ed25519PrivateKey.generate()
    _write_secret(workdir / "host_key", openssh_private_key(host_key))
    _write_secret(workdir / "authorized_keys", openssh_public_key(client_key) + "\n")
    root = workdir / "uploads"
    root.mkdir()
    port, username = free_port(), getpass.getuser()
    (workdir / "sshd_config").write_text(_sshd_config(workdir, port, username, read_only))
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation dir
    process = server_process("sshd", [sshd, "-D", "-e", "-f", str(workdir / "sshd_config")], workdir)
    process.wait_until(lambda: greets_with(port, b"SSH-2.0-"))
    return SSHServer(
        port, username, openssh_public_key(host_key), openssh_private_key(client_key), root, process
    )


def _sshd_config(workdir: Path, port: int, username: str, read_only: bool) -> str:
    sftp = "internal-sftp -R" if read_only else "internal-sftp"
    return f"""
Port {port}
ListenAddress {LOOPBACK}
HostKey {workdir / "host_key"}
PidFile none
AuthorizedKeysFile {workdir / "authorized_keys"}
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers {username}
Subsystem sftp {sftp}
ForceCommand {sftp}
LoginGraceTime 20
MaxStartups 50
LogLevel INFO
"""


def _write_secret(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o600)


def _descendants(pid: int) -> list[int]:
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        children += [int(child) for child in text]
    return [grandchild for child in children for grandchild in [child, *_descendants(child)]]


def freeze(pids: list[int]) -> None:
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)


def thaw(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


# --- FTP: pyftpdlib -----------------------------------------------------------------------


@dataclass
class FTPServer:
    port: int
    username: str
    password: str
    root: Path
    process: ManagedProcess
    ca_cert: str | None = None  # set when the server speaks FTPS

    def destination_config(self, directory: str) -> dict:
        """An FTP destination's config aimed at this server, into `directory` (below its root)."""
        return {"host": LOOPBACK, "port": self.port, "username": self.username, "directory": directory}

    def credentials(self) -> dict:
        return {"password": self.password}


def start_ftpd(workdir: Path, *, tls: bool = False, read_only: bool = False) -> FTPServer:
    """pyftpdlib; ``read_only``: the user may list and read, every write is refused (550)."""
    python = find_program("python", VENV_BIN)
    root = workdir / "uploads"
    root.mkdir()
    port, username, password = free_port(), "omnium", "omnium-ftp-secret"
    writes = [] if read_only else ["-w"]
    argv = [python, "-m", "pyftpdlib", "-i", LOOPBACK, "-p", str(port), *writes, "-d", str(root)]
    argv += ["-u", username, "-P", password]
    ca_cert = None
    if tls:
        ca_cert = write_self_signed(workdir)
        argv += ["--tls", "--keyfile", str(workdir / "tls.key"), "--certfile", str(workdir / "tls.crt")]
    process = server_process("ftpd-tls" if tls else "ftpd", argv, workdir)
    process.wait_until(lambda: greets_with(port, b"220"))
    return FTPServer(port, username, password, root, process, ca_cert)


def write_self_signed(workdir: Path, names: tuple[str, ...] = (LOOPBACK,)) -> str:
    """A self-signed certificate for ``names`` (IP addresses or DNS names) in
    workdir/tls.crt, its key in tls.key; returns the certificate's PEM (its own CA)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"omnium test {names[0]}")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([_general_name(each) for each in names]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    (workdir / "tls.crt").write_text(pem)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    _write_secret(workdir / "tls.key", key_pem.decode())
    return pem


def _general_name(text: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(text))
    except ValueError:
        return x509.DNSName(text)
