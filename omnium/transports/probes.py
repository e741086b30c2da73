"""The connection test: a transport's ``probe`` run under the same hard deadline as a send,
each step timed, the first failure kept beside its step. Nothing here touches a feed file:
the test file's name is one no feed path can have."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .base import Transport, TransportError, temporary_name
from .failures import Reason, reason_of_os_error


def run_connection_test(transport: Transport) -> ProbeReport:
    """Run ``transport``'s probe under its send deadline, then close it. Never raises
    ``TransportError``: the report holds the failure."""
    steps = ProbeSteps()
    try:
        with transport.deadline() as deadline:
            transport.probe(steps, deadline)
    except TransportError as failure:
        steps.failed(failure)
    finally:
        transport.close()
    return steps.report


def probe_file_name() -> str:
    """The name of a connection test's file: hidden, so no feed path can ever take it (feed
    paths have no hidden segments), and shaped like an upload's temporary name, so a test
    file a cut connection left behind is removed by the next send's clean-up."""
    return temporary_name("omnium-connection-test")


@dataclass
class ProbeStep:
    """One step of a connection test: what was tried, how long it took, how it failed."""

    name: str
    seconds: float = 0.0
    error: TransportError | None = None


@dataclass
class ProbeReport:
    steps: list[ProbeStep] = field(default_factory=list)

    @property
    def failure(self) -> TransportError | None:
        return next((step.error for step in self.steps if step.error is not None), None)

    @property
    def ok(self) -> bool:
        return bool(self.steps) and self.failure is None


class ProbeSteps:
    """Times the steps of a connection test and keeps the first failure beside its step."""

    def __init__(self):
        self.report = ProbeReport()

    @contextlib.contextmanager
    def step(self, name: str, failure: Callable[[BaseException], TransportError] | None = None):
        """Run one step; a library error is mapped by ``failure`` (by its socket error if none)."""
        step = ProbeStep(name)
        self.report.steps.append(step)
        started = time.monotonic()
        try:
            yield
        except TransportError as exc:
            step.error = exc
            raise
        except Exception as exc:
            step.error = failure(exc) if failure else _unmapped(exc)
            raise step.error from exc
        finally:
            step.seconds = time.monotonic() - started

    def failed(self, error: TransportError) -> None:
        """The test ended with ``error``: it replaces what the failing step said (a fired
        deadline or a refused address is the truth whatever the library raised), or is a step
        of its own."""
        failing = next((step for step in self.report.steps if step.error is not None), None)
        if failing is None:
            self.report.steps.append(ProbeStep("check the settings", error=error))
        elif error.reason in (Reason.DEADLINE, Reason.ADDRESS_REFUSED):
            failing.error = error


def _unmapped(exc: BaseException) -> TransportError:
    reason = reason_of_os_error(exc, connected=True)
    return TransportError(f"{type(exc).__name__}: {exc}", reason=reason)
