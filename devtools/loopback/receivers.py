"""One of every receiver on loopback, and the destination settings that aim at each.

`make demo` and bench/deliver.py start a set of these, create destinations from
`settings(kind)`, and watch files land. The hanging destination is an SFTP destination aimed
at a host that accepts connections and never answers.
"""

import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from devtools.loopback import hosts, servers

LOOPBACK = servers.LOOPBACK
KINDS = ("s3", "sftp", "ftp", "webhook", "redis")


def webhook_secret() -> str:
    import base64

    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


@dataclass
class Receivers:
    workdir: Path
    s3: servers.S3Server
    sftp: servers.SSHServer
    ftp: servers.FTPServer
    webhook: hosts.WebhookReceiver
    silent: hosts.SilentHost
    trickle: hosts.TricklingHost
    redis_url: str
    _prefixes: dict = field(default_factory=dict)

    def settings(self, kind: str, name: str, **config) -> tuple[str, dict, dict]:
        """(kind, config, credentials) of a destination of `kind`, in its own folder `name`."""
        makers = {"s3": self._s3, "sftp": self._sftp, "ftp": self._ftp, "webhook": self._webhook,
                  "redis": self._redis}
        kind, base, credentials = makers[kind](name)
        return kind, {**base, **config}, credentials

    def hanging(self, **config) -> tuple[str, dict, dict]:
        """An SFTP destination whose host accepts connections and never answers."""
        kind, base, credentials = self._sftp("hanging")
        return kind, {**base, "port": self.silent.port, **config}, credentials

    def trickling(self, **config) -> tuple[str, dict, dict]:
        """A webhook destination whose host sends one byte a second and never finishes."""
        kind, base, credentials = self._webhook("trickling")
        return kind, {**base, "url": f"http://{LOOPBACK}:{self.trickle.port}/feeds", **config}, credentials

    def _s3(self, name):
        return "s3", self.s3.destination_config(prefix=name), self.s3.credentials()

    def _sftp(self, name):
        folder = self.sftp.root / name
        folder.mkdir(parents=True, exist_ok=True)
        return "sftp", self.sftp.destination_config(str(folder)), self.sftp.credentials()

    def _ftp(self, name):
        (self.ftp.root / name).mkdir(parents=True, exist_ok=True)
        return "ftp", self.ftp.destination_config(f"/{name}"), self.ftp.credentials()

    def _webhook(self, name):
        return "webhook", self.webhook.destination_config(f"{self.webhook.url}/{name}"), self.webhook.credentials()

    def _redis(self, name):
        return "redis", {"url": self.redis_url, "key_prefix": f"{name}:"}, {}

    def stop(self) -> None:
        for stop in (self.webhook.stop, self.silent.stop, self.trickle.stop, self.s3.process.stop,
                     self.sftp.process.stop, self.ftp.process.stop):
            try:
                stop()
            except Exception:  # stopping the rest matters more than one failure to stop
                pass
        shutil.rmtree(self.workdir, ignore_errors=True)


def start(redis_url: str, workdir: Path | None = None) -> Receivers:
    """Start every receiver; call `stop()` on the result to end them all."""
    workdir = Path(workdir or tempfile.mkdtemp(prefix="omnium-receivers-"))
    started = []
    try:
        s3 = servers.start_s3(_folder(workdir, "s3"))
        started.append(s3.process)
        sftp = servers.start_sshd(_folder(workdir, "sftp"))
        started.append(sftp.process)
        ftp = servers.start_ftpd(_folder(workdir, "ftp"))
        started.append(ftp.process)
    except Exception:
        for process in started:
            process.stop()
        raise
    webhook = hosts.WebhookReceiver(webhook_secret()).start()
    return Receivers(workdir, s3, sftp, ftp, webhook, hosts.SilentHost(), hosts.TricklingHost(), redis_url)


def _folder(workdir: Path, name: str) -> Path:
    path = workdir / name
    path.mkdir(parents=True, exist_ok=True)
    return path
