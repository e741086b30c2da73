"""The connection test of every transport, against its real server: it writes a test file
where feed files go, removes it again, and reports each step; against a host that never
answers it fails within the send deadline at the step that hung."""

from __future__ import annotations

import time

from omnium.transports.failures import Reason
from omnium.transports.probes import run_connection_test

QUICK = {"connect_timeout": 1.0, "send_timeout": 1.5}
SLACK = 2.0


def _leftover_test_files(kit) -> list[str]:
    """Test files the connection test left on the server (none, where the protocol can remove them)."""
    if kit.kind in ("sftp", "ftp"):
        return [p.name for p in kit.server.root.rglob(".omnium-connection-test*")]
    if kit.kind == "s3":
        listing = kit.reader.list_objects_v2(Bucket=kit.server.bucket, Prefix=f"{kit.prefix}/.omnium-connection")
        return [item["Key"] for item in listing.get("Contents", [])]
    if kit.kind == "redis":
        return [key.decode() for key in kit.reader.keys(f"{kit.key_prefix}.omnium-connection-test*")]
    return []


def test_connection_test_writes_and_removes_a_test_file(kit):
    report = run_connection_test(kit.transport())

    assert report.ok, [(step.name, step.error) for step in report.steps]
    assert all(step.seconds >= 0 for step in report.steps)
    assert _leftover_test_files(kit) == []
    if kit.kind == "webhook":  # one signed message the receiver can tell from a feed file
        delivery = kit.receiver.deliveries[-1]
        assert delivery.verified and delivery.headers["omnium-test"] == "true"


def test_connection_test_names_the_step_that_failed(kit):
    report = run_connection_test(kit.transport(credentials=kit.bad_credentials()))

    assert not report.ok
    failed = next(step for step in report.steps if step.error is not None)
    assert failed.error.reason in (Reason.AUTH_REFUSED, Reason.HTTP_STATUS), str(failed.error)
    assert failed is report.steps[-1], "nothing is tried after the failing step"


def test_connection_test_of_a_silent_host_fails_within_the_deadline(kit, silent_host):
    started = time.monotonic()

    report = run_connection_test(kit.transport(**kit.aimed_at(silent_host.port), **QUICK))

    assert time.monotonic() - started < QUICK["send_timeout"] + SLACK
    assert not report.ok
    assert report.failure.reason in (Reason.NO_ANSWER, Reason.DEADLINE), str(report.failure)

