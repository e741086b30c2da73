"""Testing a destination's connection for a person, and recording it in the attempts log.

The test uses a transport of its own, never the sender's cached one, and touches nothing the
sender reads: no owed file, no proof, no back-off, no published health. Its attempt row is
marked ``is_test`` so it never counts as a delivery.
"""

import time
from dataclasses import dataclass

from omnium.clients.credentials import CredentialError
from omnium.clients.models import Destination
from omnium.delivery.models import DeliveryAttempt
from omnium.safe_errors import plain_and_technical, safe_error_text
from omnium.transports import TransportError, registry
from omnium.transports.failures import Reason
from omnium.transports.probes import ProbeReport, ProbeStep, run_connection_test

TEST_DOC_KEY = "(connection test)"


@dataclass
class ConnectionTestResult:
    """What the page shows: the destination, each step, and the failure in plain words."""

    destination: Destination
    report: ProbeReport
    plain: str = ""
    technical: str = ""

    @property
    def ok(self) -> bool:
        return self.report.ok


def run(destination: Destination) -> ConnectionTestResult:
    """Run the connection test of ``destination`` under its send deadline and log it."""
    attempt = DeliveryAttempt.objects.create(destination=destination, doc_key=TEST_DOC_KEY, seq=0, is_test=True)
    started = time.monotonic()
    report = _run(destination)
    failure = report.failure
    error = safe_error_text(failure) if failure else ""
    DeliveryAttempt.objects.filter(pk=attempt.pk).update(
        ok=report.ok, duration_ms=int((time.monotonic() - started) * 1000),
        receipt=_summary(report), error=error, error_class=type(failure).__name__ if failure else "",
        permanent=bool(failure and failure.permanent))
    plain, technical = plain_and_technical(error)
    return ConnectionTestResult(destination, report, plain or (failure and failure.plain_sentence) or "", technical)


def _run(destination: Destination) -> ProbeReport:
    try:
        transport = registry.transport_for(destination.kind, destination.config, destination.credentials)
    except (TransportError, CredentialError) as exc:
        error = exc if isinstance(exc, TransportError) else TransportError(str(exc), permanent=True,
                                                                           reason=Reason.INVALID_SETTINGS)
        return ProbeReport([ProbeStep("read the destination's settings", error=error)])
    return run_connection_test(transport)


def _summary(report: ProbeReport) -> str:
    return "; ".join(f"{step.name}: {'failed' if step.error else 'ok'} in {step.seconds:.2f} s"
                     for step in report.steps)
