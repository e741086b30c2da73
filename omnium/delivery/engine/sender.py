"""The sender: drains one destination's owed files, one at a time (or a batch at a time to a
transport that takes several in one round trip: the Redis pull cache), under its lease.

For each owed (subscription, file) it reads the file's CURRENT version (so a version that
was overtaken while it waited is never sent), renders the subscription's transform, pushes
it through the destination's transport under the hard deadline, and records the proof in one
statement that only moves `sent_seq` forward. A failure backs off this destination only.
"""

import hashlib
import itertools
import logging
import time
import uuid
from dataclasses import dataclass
from enum import StrEnum

from django.db.models.expressions import RawSQL
from django.utils import timezone

from omnium.clients import file_names
from omnium.clients.credentials import CredentialError
from omnium.clients.models import Destination
from omnium.database import claim_renewal
from omnium.delivery import health, kicks
from omnium.delivery.engine import (
    backoff,
    deletion,
    lease,
    owed_files,
    proofs,
    rendering,
    stopping,
    transport_cache,
)
from omnium.delivery.engine.owed_files import OwedFile
from omnium.delivery.engine.transport_cache import transport_for
from omnium.delivery.kicks import kick
from omnium.delivery.models import DeliveryState, DeliverySwitch
from omnium.feeds.models import FeedDocument
from omnium.metrics.families import count_send, count_send_failure
from omnium.safe_errors import safe_error_text
from omnium.transports import TransportError
from omnium.transports.base import FeedFile, Receipt
from omnium.transports.failures import Reason
from omnium.transports.registry import TRANSPORTS

log = logging.getLogger(__name__)

# One drain task sends for at most this long, then the next kick carries on.
DRAIN_BUDGET_S = 20.0


class Outcome(StrEnum):
    """How one destination's drain ended."""

    BUSY = "busy"  # another sender holds the destination's lease
    OFF = "off"  # switched off, deleted, or delivery is off
    IDLE = "idle"  # nothing it may send now (nothing owed, paused, or waiting for a retry)
    DRAINED = "drained"  # sent what was owed (or its time budget ran out: a new kick carries on)
    FAILED = "failed"  # a send failed; the destination backs off
    LOST_LEASE = "lost_lease"  # its lease passed to another sender


def drain(destination_id: int) -> str:
    """Send everything the destination is owed (for at most DRAIN_BUDGET_S); returns why it
    stopped."""
    started = time.monotonic()

    def acquire_and_drain() -> str:
        claimed_at = time.monotonic()
        taken = owed_files.take_lease(destination_id, _files_per_push(destination_id))
        if taken is None:  # its holder looks again before it lets go; if it died, the sweeper
            kicks.arrived(destination_id)  # kicks once the lease has expired
            return Outcome.BUSY
        return _drain_and_release(destination_id, taken, started, claimed_at)

    # A deleted destination's lease cannot be taken (its sender state row's foreign key).
    with stopping.draining(destination_id):
        return deletion.unless_deleted(destination_id, acquire_and_drain, Outcome.OFF)


# The destination and its client, loaded through the ORM only when either row changed since
# this process last loaded them: compiling and loading that query was a quarter of a drain's
# Python time (py-spy, a fan-out to 2,000 destinations). xmin, the id of the transaction that
# wrote a row's current version, changes with every update of the row; NEXT_OWED reads both
# rows' with each owed file (a statement of their own was one round trip in seven of a send),
# so a change made during a drain also applies from its next file on.
_loaded: dict[int, tuple[tuple[str, str], Destination]] = {}


def _destination(destination_id: int, row_versions: tuple[str, str]) -> Destination | None:
    loaded = _loaded.get(destination_id)
    if loaded is not None and loaded[0] == row_versions:
        return loaded[1]
    destination = Destination.objects.select_related("client").filter(pk=destination_id).first()
    if destination is None:
        _loaded.pop(destination_id, None)
    else:
        _loaded[destination_id] = (row_versions, destination)
    return destination


# What NEXT_OWED reads as the two rows' versions, read here for every destination at once.
_ROW_VERSIONS = {"destination_xmin": RawSQL('"clients_destination".xmin::text', ()),
                 "client_xmin": RawSQL('"clients_client".xmin::text', ())}
LOADED_PER_QUERY = 1000


def load_destinations(ids) -> int:
    """Load these destinations and their clients into this process's cache, a thousand a query,
    each client once; returns how many were found.

    A delivery worker does this as it starts (delivery.worker.worker_threads): a destination's first
    drain in a process otherwise loads it through the ORM, and the first fan-out to 5,000
    destinations after a restart spent a quarter of its senders' Python time on those loads
    (py-spy --gil, bench/scale.py)."""
    ids, clients, found = list(ids), {}, 0
    for start in range(0, len(ids), LOADED_PER_QUERY):
        rows = (Destination.objects.select_related("client").annotate(**_ROW_VERSIONS)
                .filter(pk__in=ids[start:start + LOADED_PER_QUERY]))
        for destination in rows:
            destination.client = clients.setdefault(destination.client_id, destination.client)
            _loaded[destination.pk] = ((destination.destination_xmin, destination.client_xmin), destination)
            found += 1
    return found


@dataclass
class HeldLease:
    """The lease a drain holds: its token, its renewal, and whether a proof let it go."""

    token: uuid.UUID
    claim: claim_renewal.HeldClaim
    released: bool = False


def _drain_and_release(destination_id: int, taken: owed_files.TakenLease, started: float, claimed_at: float) -> str:
    token = taken.token
    held = HeldLease(token, claim_renewal.hold(f"destination {destination_id}",
                                               lambda: lease.renew(destination_id, token), claimed_at))
    try:
        outcome = _drain_under_lease(destination_id, held, taken.first_files, started)
    finally:
        claim_renewal.let_go(held.claim)
        if not held.released:
            lease.release(destination_id, token)
        kicks.arrived(destination_id)
    if held.released:
        return outcome  # let go by the last proof, which saw nothing else owed (RECORD_PROOF)
    # A kick that arrived while we held the lease returned at once: look again, so that no
    # wake-up is lost between our last look and the release.
    if outcome == Outcome.DRAINED and (owed := owed_files.next_owed(destination_id)) and owed.gate is None:
        kick(destination_id)
    return outcome


def _drain_under_lease(destination_id: int, held: HeldLease, owed: list[OwedFile],
                       started: float) -> str:
    """Send `owed` (read as the lease was taken), then what is owed next, until nothing is.
    The files are read with their attempts opened: those not sent are forgotten."""
    sent = 0
    while owed:
        destination = _destination(destination_id, owed[0].row_versions)
        stop = _reason_to_stop(destination, owed[0], held, started)
        batch = [] if stop else list(itertools.takewhile(lambda file: file.gate is None, owed))
        proofs.forget_attempts(file.attempt_id for file in owed[len(batch):])
        if stop:
            return stop
        if not send_files(destination, batch, held):
            return Outcome.FAILED
        if held.released:
            return Outcome.DRAINED
        sent += len(batch)
        owed = owed_files.next_to_send(destination_id, _files_per_push(destination_id))
    return Outcome.DRAINED if sent else Outcome.IDLE


def _reason_to_stop(destination: Destination | None, first: OwedFile, held: HeldLease, started: float) -> str | None:
    """Why the drain must stop before sending its next file (or batch), if it must. The gate
    and the destination's switches are read with every file, so a pause, a back-off or a
    switch-off set elsewhere takes effect at once."""
    if destination is None or not destination.can_send() or not DeliverySwitch.is_on():
        return Outcome.OFF
    if first.gate is not None:
        return Outcome.IDLE
    if time.monotonic() - started > DRAIN_BUDGET_S or stopping.under_way():
        # Hand over to a fresh task (re-kicked by drain): keeps the queues fair, and a worker
        # that is stopping leaves the rest to another at once.
        return Outcome.DRAINED
    if not held.claim.held():
        return Outcome.LOST_LEASE
    return None


def _files_per_push(destination_id: int) -> int:
    """How many owed files to take at once: what the destination's transport takes in one push
    (1 until this process has loaded the destination)."""
    loaded = _loaded.get(destination_id)
    return TRANSPORTS[loaded[1].kind].files_per_push if loaded is not None else 1


@dataclass(frozen=True)
class _Ready:
    """An owed file rendered and named, about to be pushed."""

    owed: OwedFile
    rendered: object  # clients.transforms.base.Rendered
    path: str

    def feed_file(self) -> FeedFile:
        version = self.owed.version
        return FeedFile(self.rendered.body, self.path, self.rendered.content_type, version.seq,
                        self.owed.shape.etag(version.content_hash.hex()))


def send_files(destination: Destination, owed: list[OwedFile], held: HeldLease | None = None) -> bool:
    """Push the current version of each owed file (several at once only to a transport that
    takes them in one round trip), the files read by owed_files.take_lease or next_to_send
    with their attempts opened; True when every proof is recorded. With the drain's lease
    `held`, whether it is still held is asked just before the files become visible at the
    destination (the fence), and the proof lets it go if nothing else is owed."""
    prepared = [(file, _prepare(file)) for file in owed]
    proofs.forget_attempts(file.attempt_id for file, rendered in prepared if rendered is None)
    ready = [rendered for _, rendered in prepared if rendered is not None]
    if not ready:
        return True
    attempt_ids = [r.owed.attempt_id for r in ready]
    started = time.monotonic()
    outcomes = _push(destination, ready, held)
    landed = [(r, attempt, receipt) for r, attempt, receipt in zip(ready, attempt_ids, outcomes)
              if isinstance(receipt, Receipt)]
    failed = [(r, attempt, error) for r, attempt, error in zip(ready, attempt_ids, outcomes)
              if not isinstance(error, Receipt)]
    if landed:
        _record_landed(destination, landed, started, held if not failed and len(outcomes) == len(ready) else None)
    if failed:
        _record_failures(destination, failed, started)
    _close_unattempted(attempt_ids[len(outcomes):], started)
    if not failed and ready[0].owed.failures_before:
        backoff.recovered(destination)
    return not failed and len(outcomes) == len(ready)


def _prepare(owed: OwedFile) -> _Ready | None:
    """The owed file rendered in its subscription's shape, with its path; None when there is
    nothing to send (the file was removed, or a newer version arrived this instant: the next
    turn sends that)."""
    version = owed.version
    if version is None:
        DeliveryState.objects.filter(pk=owed.state_id).update(force_resend=False, wanted_seq=0)
        return None
    try:
        rendered, path = _rendered_and_named(version, owed.shape, owed.file_name_template, owed.games_code)
    except rendering.VersionMoved:
        return None
    return _Ready(owed, rendered, path)


def _rendered_and_named(version: rendering.CurrentVersion, shape, file_name_template: str, games_code: str):
    """The version in the shape, and the path it goes to (raises rendering.VersionMoved)."""
    rendered = rendering.render(version, shape.transform, shape.marks(version.seq))
    return rendered, file_names.render(file_name_template, games_code, version.feed_type, version.filter,
                                       rendered.extension)


def file_as_pushed(state: DeliveryState) -> FeedFile | None:
    """The file `state`'s destination would be sent now: the current version, in its
    subscription's shape, under its name, byte for byte what a send would push (a client
    downloads it to compare with what it holds). None when the file no longer exists."""
    subscription = state.subscription
    shape = subscription.shape
    for _ in range(3):  # a newer version may land between the two reads: read again
        document = FeedDocument.objects.filter(doc_key=state.doc_key).values_list(
            "seq", "content_hash", "changed_at", "feed_type", "filter", "built_at").first()
        if document is None:
            return None
        seq, content_hash, changed_at, feed_type, filter, built_at = document
        version = rendering.CurrentVersion(state.doc_key, seq, bytes(content_hash), changed_at, feed_type, filter,
                                           built_at)
        try:
            rendered, path = _rendered_and_named(version, shape, subscription.file_name_template,
                                                 subscription.definition.games.code)
        except rendering.VersionMoved:
            continue
        return FeedFile(rendered.body, path, rendered.content_type, seq, shape.etag(version.content_hash.hex()))
    return None


def _push(destination: Destination, ready: list[_Ready], held: HeldLease | None) -> list:
    """Each file's Receipt or error, in order; fewer outcomes than files when the transport
    stopped at a failure."""
    still_ours = held.claim.held if held else None
    try:
        transport = transport_for(destination)
        if len(ready) == 1:
            file = ready[0].feed_file()
            return [transport.send(file.body, file.path, content_type=file.content_type, version=file.version,
                                   etag=file.etag, still_ours=still_ours)]
        return transport.send_many([r.feed_file() for r in ready], still_ours=still_ours)
    except (TransportError, CredentialError) as exc:
        return [exc]


def _record_landed(destination, landed: list, started: float, releasing: HeldLease | None) -> None:
    """The proofs of the files that landed, the metrics and the destination's last success;
    the proof lets the lease of `releasing` go when nothing else is owed."""
    if releasing is not None:
        releasing.claim.may_end = True
    recorded = proofs.record_proofs(destination.pk, [
        proofs.Landed(r.owed.state_id, attempt, r.owed.version.seq, r.owed.version.content_hash,
                      r.owed.version.changed_at, len(r.rendered.body), hashlib.sha256(r.rendered.body).digest(),
                      receipt.text, r.path, proofs.duration_ms(started))
        for r, attempt, receipt in landed], releasing.token if releasing else None)
    if releasing is not None:
        releasing.released = releasing.claim.may_end = recorded.released
    for r, _, _ in landed:
        count_send(destination.kind, destination.client.name, recorded.ages_ms.get(r.owed.state_id))
    health.sent(destination.pk)


def _record_failures(destination, failed: list, started: float) -> None:
    """Each failed file's record; the destination backs off once for the push."""
    for n, (r, attempt, error) in enumerate(failed):
        _record_failure(destination, r.owed, attempt, error, started, back_off=n == 0)


def _close_unattempted(attempt_ids: list[int], started: float) -> None:
    """Attempts the transport never got to (it stopped at an earlier failure)."""
    for attempt_id in attempt_ids:
        proofs.finish_attempt(attempt_id, started, ok=False, error_class="NotAttempted", permanent=False,
                              error="not sent: an earlier file of the same push failed")


def _record_failure(destination, owed: OwedFile, attempt_id: int, exc: Exception, started: float,
                    back_off: bool = True) -> None:
    """Log the failed attempt and back the destination off. A permanent-looking error (a 4xx,
    bad credentials, a changed host key) also marks the file's dead letter: a record of what
    failed, replayable, that blocks nothing. Every error is retried: the client may be
    mid-deploy, and its fix must be picked up without a person."""
    permanent = getattr(exc, "permanent", True)
    message = safe_error_text(exc)  # what every record below keeps: no URL path, query or body
    # Read again: a pause may have cut this send. A person stopped it; not the destination's fault.
    cut_by_pause = backoff.gate(destination.pk) == backoff.Gate.PAUSED
    if cut_by_pause:
        message = f"cut by a pause: {message}"
    elif stopping.was_cut(destination.pk):
        message = f"cut: the worker was stopping and the send outlasted its drain deadline: {message}"
    log.warning("send of %s to destination %s failed (%s): %s", owed.doc_key, destination.pk,
                "permanent" if permanent else "transient", message)
    proofs.finish_attempt(attempt_id, started, ok=False, error_class=type(exc).__name__, error=message,
                          permanent=permanent)
    count_send_failure(destination.kind, exc)
    now = timezone.now()
    marks = {"dead_lettered_at": now} if permanent and not cut_by_pause else {}
    DeliveryState.objects.filter(pk=owed.state_id).update(
        last_error=message, last_attempt_at=now, failed_seq=owed.version.seq, **marks)
    health.record_event("dead_lettered" if marks else "failed", destination.pk, doc_key=owed.doc_key,
                        error=message)
    if getattr(exc, "reason", None) == Reason.AUTH_REFUSED or getattr(exc, "status", None) == 401:
        transport_cache.credentials_refused(destination)
    if back_off and not cut_by_pause:
        backoff.failed(destination, message, retry_after=getattr(exc, "retry_after", None), permanent=permanent,
                       reason=getattr(exc, "reason", Reason.OTHER))
