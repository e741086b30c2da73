"""The sender in-process: coalescing, forward-only proof, the event filter, refusals."""

import dataclasses
import gzip

import pytest
import redis
from django.db import connection, transaction
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from devtools.generator import Generator
from devtools.loopback.hosts import WebhookReceiver
from omnium.delivery.engine import lease, owed_files, proofs, sender
from omnium.delivery.models import DeliveryAttempt, DeliveryState, SenderState
from omnium.feeds.builder import build_file
from omnium.feeds.models import FeedDocument
from omnium.games import workflow
from omnium.games.models import Fixture
from omnium.transports import registry as transport_registry
from tests.delivery.fixtures import WEBHOOK_SECRET, redis_destination_settings, webhook_settings
from tests.transports.kits import REDIS_TEST_URL


def change_and_rebuild(games, score) -> int:
    fixture = Fixture.objects.filter(games=games).order_by("starts_at", "id").first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: score})
    return build_file(f"{games.code}/calendar").seq


def test_a_file_arrives_byte_identical_with_its_proof(small_games, subscribe, receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    document = FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar")

    assert sender.drain(destination.pk) == sender.Outcome.DRAINED

    assert receiver.received(f"{small_games.code}/calendar.json") == bytes(document.body)
    state = DeliveryState.objects.get(destination=destination)
    assert (state.sent_seq, bytes(state.sent_hash), state.sent_bytes) == (
        document.seq, bytes(document.content_hash), document.size)
    assert state.receipt.startswith("200 ") and state.age_ms is not None and state.sent_at is not None
    attempt = DeliveryAttempt.objects.get(destination=destination)
    assert (attempt.ok, attempt.seq, attempt.bytes) == (True, document.seq, document.size)
    with connection.cursor() as cursor:  # the attempt row's asynchronous commit stayed its own
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"


@pytest.mark.parametrize("files", [1, 2])
def test_attempt_rows_are_committed_without_waiting_for_the_disk_in_one_statement_or_a_batch(
        small_games, subscribe, files):
    destination = subscribe(small_games, redis_destination_settings(), feed_types=("calendar", "country"))
    with transaction.atomic(), connection.cursor() as cursor:  # so the setting can be read after
        owed = owed_files.next_to_send(destination.pk, files)
        attempts = [o.attempt_id for o in owed]
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "off"

    assert len(owed) == files
    opened = DeliveryAttempt.objects.filter(pk__in=attempts)
    assert sorted(opened.values_list("doc_key", "seq")) == sorted((o.doc_key, o.version.seq) for o in owed)
    assert [a.doc_key for a in sorted(opened, key=lambda a: attempts.index(a.pk))] == [o.doc_key for o in owed]


def test_only_the_newest_of_two_owed_versions_is_sent(small_games, subscribe, receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    sender.drain(destination.pk)
    receiver.deliveries.clear()
    busy = lease.acquire(destination.pk)  # another sender is "sending"

    v812 = change_and_rebuild(small_games, 812)
    v813 = change_and_rebuild(small_games, 813)
    assert sender.drain(destination.pk) == sender.Outcome.BUSY
    lease.release(destination.pk, busy)
    assert sender.drain(destination.pk) == sender.Outcome.DRAINED

    sent = [a.seq for a in DeliveryAttempt.objects.filter(destination=destination, seq__gt=v812 - 1)]
    assert sent == [v813]
    assert len(receiver.deliveries) == 1 and b'"score":"813"' in receiver.deliveries[0].body


def test_sent_seq_never_moves_backwards(small_games, subscribe):
    destination = subscribe(small_games, redis_destination_settings())
    sender.drain(destination.pk)
    state = DeliveryState.objects.get(destination=destination)
    DeliveryState.objects.filter(pk=state.pk).update(wanted_seq=state.sent_seq + 1)  # owed again
    [owed] = owed_files.next_to_send(destination.pk, 1)
    stale = dataclasses.replace(owed.version, seq=state.sent_seq - 1, content_hash=b"x" * 32)

    attempt = owed.attempt_id
    recorded = proofs.record_proofs(destination.pk, [proofs.Landed(
        owed.state_id, attempt, stale.seq, stale.content_hash, stale.changed_at, 3, b"x" * 32, "old", "p", 1)])

    assert recorded.ages_ms == {owed.state_id: None}, "no proof: a newer one is there"

    assert DeliveryState.objects.get(pk=state.pk).sent_seq == state.sent_seq


def test_a_games_files_never_reach_a_subscriber_of_another_games(small_games, subscribe):
    other = Generator("small", seed=8).run()
    build_file(f"{other.code}/calendar")
    destination = subscribe(small_games, redis_destination_settings(), feed_types=("calendar", "country"))

    change_and_rebuild(other, 5)

    keys = set(DeliveryState.objects.filter(destination=destination).values_list("doc_key", flat=True))
    assert keys and all(key.startswith(f"{small_games.code}/") for key in keys)


def test_the_redis_destination_stores_the_gzip_body_write_if_newer(small_games, subscribe):
    settings = redis_destination_settings()
    destination = subscribe(small_games, settings)
    sender.drain(destination.pk)
    document = FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar")

    stored = redis.Redis.from_url(REDIS_TEST_URL).hgetall(f"{settings[1]['key_prefix']}{small_games.code}/calendar.json")

    assert int(stored[b"v"]) == document.seq
    assert gzip.decompress(stored[b"gz"]) == bytes(document.body)


def _owe(destination, ages_s: dict[str, int], failed: tuple[str, ...] = ()) -> dict[str, int]:
    """A file of each named feed type owed since `ages_s[name]` seconds ago; those in `failed`
    owe only the version that failed, the others a version newer than one that failed. Returns
    the state id of each."""
    from datetime import timedelta

    from django.utils import timezone

    states = {}
    for state in DeliveryState.objects.filter(destination=destination).select_related("subscription__definition"):
        name = state.subscription.definition.feed_type
        if name in ages_s and name not in states:  # one file of each feed type
            state.wanted_seq, state.wanted_at = state.sent_seq + 1, timezone.now() - timedelta(seconds=ages_s[name])
            state.failed_seq = state.wanted_seq if name in failed else state.sent_seq
            state.save()
            states[name] = state.pk
    return states


def test_the_longest_owed_file_is_sent_first_and_in_a_back_off_a_newer_version_before_the_failed_ones(
        small_games, subscribe):
    from datetime import timedelta

    from django.utils import timezone

    from omnium.clients.models import Subscription
    from omnium.delivery.engine.backoff import Gate
    from omnium.delivery.models import SenderState

    destination = subscribe(small_games, redis_destination_settings(), feed_types=("calendar", "medals", "entries"))
    sender.drain(destination.pk)
    states = _owe(destination, {"calendar": 30, "medals": 20, "entries": 10}, failed=("calendar", "medals"))

    assert owed_files.next_owed(destination.pk).state_id == states["calendar"]  # no back-off: oldest first

    SenderState.objects.update_or_create(destination=destination, defaults={
        "retry_at": timezone.now() + timedelta(minutes=5), "consecutive_failures": 3})
    owed = owed_files.next_owed(destination.pk)
    assert (owed.state_id, owed.gate, owed.failures_before) == (states["entries"], None, 3)  # newer: at once

    DeliveryState.objects.filter(pk=states["entries"]).update(failed_seq=F("wanted_seq"))
    owed = owed_files.next_owed(destination.pk)
    assert (owed.state_id, owed.gate) == (states["calendar"], Gate.WAITING)  # all failed: the oldest waits

    Subscription.objects.filter(states__pk=states["calendar"]).update(active=False)
    assert owed_files.next_owed(destination.pk).state_id == states["medals"]  # a retired subscription is skipped


def test_taking_the_lease_reads_the_first_owed_files_in_the_same_statement(small_games, subscribe):
    """A drain's first statement: the lease and the files owed first; None while another
    sender holds the lease; the lease with no file when nothing is owed; a paused destination's
    files come with their gate, and its lease is still taken (the drain ends at the gate)."""
    from omnium.delivery.engine.backoff import Gate

    destination = subscribe(small_games, redis_destination_settings(), feed_types=("calendar", "medals", "entries"))
    sender.drain(destination.pk)
    held = owed_files.take_lease(destination.pk, 3)
    assert held is not None and held.first_files == []  # nothing owed: the lease alone
    assert owed_files.take_lease(destination.pk, 3) is None  # held: a second sender gets nothing
    assert lease.acquire(destination.pk) is None
    lease.release(destination.pk, held.token)

    states = _owe(destination, {"calendar": 30, "medals": 20, "entries": 10})
    taken = owed_files.take_lease(destination.pk, 2)

    assert [f.state_id for f in taken.first_files] == [states["calendar"], states["medals"]]  # oldest first
    assert SenderState.objects.get(destination=destination).lease_token == taken.token
    assert [f.version.seq for f in taken.first_files] == [
        FeedDocument.objects.get(doc_key=f.doc_key).seq for f in taken.first_files]
    lease.release(destination.pk, taken.token)

    SenderState.objects.filter(destination=destination).update(paused=True)
    paused = owed_files.take_lease(destination.pk, 1)
    assert [(f.state_id, f.gate) for f in paused.first_files] == [(states["calendar"], Gate.PAUSED)]


def test_the_statement_that_reads_the_files_to_send_opens_their_attempts_and_only_theirs(small_games, subscribe):
    """The lease's statement (and the next read of a drain) opens an attempt for each file
    whose gate is open, and none for a file that waits for its retry or a paused destination;
    the lease's commit waits for the disk, the next read's does not."""
    from datetime import timedelta

    from django.utils import timezone

    destination = subscribe(small_games, redis_destination_settings(), feed_types=("calendar", "medals", "entries"))
    sender.drain(destination.pk)
    states = _owe(destination, {"calendar": 30, "medals": 20, "entries": 10}, failed=("calendar", "medals"))
    SenderState.objects.filter(destination=destination).update(retry_at=timezone.now() + timedelta(minutes=5),
                                                              consecutive_failures=3)
    open_attempts = DeliveryAttempt.objects.filter(destination=destination, ok__isnull=True)

    with transaction.atomic(), connection.cursor() as cursor:
        taken = owed_files.take_lease(destination.pk, 3)
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"

    entries = FeedDocument.objects.get(doc_key=taken.first_files[0].doc_key)
    assert [(f.state_id, f.attempt_id is not None) for f in taken.first_files] == [
        (states["entries"], True), (states["calendar"], False), (states["medals"], False)]
    assert list(open_attempts.values_list("pk", "doc_key", "seq")) == [
        (taken.first_files[0].attempt_id, entries.doc_key, entries.seq)]

    open_attempts.delete()
    with transaction.atomic(), connection.cursor() as cursor:
        [entries_again, *waiting] = owed_files.next_to_send(destination.pk, 3)
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "off"
    assert list(open_attempts.values_list("pk", flat=True)) == [entries_again.attempt_id]
    assert [f.attempt_id for f in waiting] == [None, None]

    open_attempts.delete()
    SenderState.objects.filter(destination=destination).update(paused=True)
    assert [f.attempt_id for f in owed_files.next_to_send(destination.pk, 3)] == [None, None, None]
    assert not open_attempts.exists()
    lease.release(destination.pk, taken.token)


def test_files_read_for_sending_but_not_sent_leave_no_attempt_behind(small_games, subscribe, monkeypatch):
    """A drain that stops before its file (delivery switched off) and a file whose version
    changed as it was rendered: their attempts are forgotten, and the file is sent later with
    one attempt."""
    from omnium.delivery import models as delivery_models
    from omnium.delivery.engine import rendering
    from omnium.delivery.models import DeliverySwitch

    destination = subscribe(small_games, redis_destination_settings())
    sender.drain(destination.pk)
    wanted = change_and_rebuild(small_games, 77)
    DeliverySwitch.objects.create(pk=1, enabled=False, reason="a test")
    monkeypatch.setattr(delivery_models, "_switch_cache", [True, 0.0])

    assert sender.drain(destination.pk) == sender.Outcome.OFF
    assert not DeliveryAttempt.objects.filter(destination=destination, ok__isnull=True).exists()

    DeliverySwitch.objects.filter(pk=1).update(enabled=True)
    monkeypatch.setattr(delivery_models, "_switch_cache", [True, 0.0])
    real_render, renders = rendering.render, []

    def moved_once(version, *args, **kwargs):
        renders.append(version.seq)
        if len(renders) == 1:
            raise rendering.VersionMoved()
        return real_render(version, *args, **kwargs)

    monkeypatch.setattr(rendering, "render", moved_once)
    assert sender.drain(destination.pk) == sender.Outcome.DRAINED

    assert renders == [wanted, wanted]
    assert list(DeliveryAttempt.objects.filter(destination=destination, seq=wanted).values_list("ok", flat=True)) == [
        True]


def test_the_last_proof_lets_the_lease_go_unless_a_version_became_owed_during_the_send(small_games, subscribe,
                                                                                       monkeypatch):
    """The proof of the last owed file releases the lease in the same statement; a version
    owed while that file was on its way keeps the lease, and the same drain sends it."""
    destination = subscribe(small_games, redis_destination_settings())
    real_transport_for, versions_sent, newer = sender.transport_for, [], []

    class ANewVersionDuringTheFirstSend:
        def __init__(self, transport):
            self.transport = transport

        def send(self, body, path, **options):
            versions_sent.append(options["version"])
            if len(versions_sent) == 1:
                newer.append(change_and_rebuild(small_games, 91))  # committed before this proof
            return self.transport.send(body, path, **options)

    monkeypatch.setattr(sender, "transport_for", lambda d: ANewVersionDuringTheFirstSend(real_transport_for(d)))

    assert sender.drain(destination.pk) == sender.Outcome.DRAINED

    assert versions_sent == [versions_sent[0], newer[0]] and newer[0] > versions_sent[0]
    assert DeliveryState.objects.get(destination=destination).sent_seq == newer[0]
    assert SenderState.objects.get(destination=destination).lease_token is None
    assert owed_files.next_owed(destination.pk) is None


def test_a_change_to_the_destination_or_its_client_applies_from_the_next_file(small_games, subscribe, receiver):
    """A sender keeps each destination it loaded until the destination's row or its client's
    changes (their xmin, read with every owed file): a new address is used, a client switched
    off stops the sending."""
    destination = subscribe(small_games, webhook_settings(receiver.url))
    assert sender.drain(destination.pk) == sender.Outcome.DRAINED
    moved_to = WebhookReceiver(WEBHOOK_SECRET).start()
    try:
        destination.config = {**destination.config, "url": moved_to.url}
        destination.set_credentials({"secret": WEBHOOK_SECRET})  # typed again: a secret never follows a new URL
        destination.save()
        change_and_rebuild(small_games, 71)
        assert sender.drain(destination.pk) == sender.Outcome.DRAINED
        assert len(moved_to.deliveries) == 1

        destination.client.active = False
        destination.client.save()
        change_and_rebuild(small_games, 72)
        assert sender.drain(destination.pk) == sender.Outcome.OFF
        assert len(moved_to.deliveries) == 1
    finally:
        moved_to.stop()


def test_destinations_loaded_ahead_serve_their_first_drain_without_a_query_until_their_row_changes(
        small_games, subscribe, receiver):
    """What a delivery worker loads as it starts (sender.load_destinations) is what a drain
    would have loaded: the same row versions, each client once."""
    first, second = (subscribe(small_games, webhook_settings(f"{receiver.url}/{n}")) for n in range(2))
    sender._loaded.clear()

    assert sender.load_destinations([first.pk, second.pk, 9_999_999]) == 2

    cached = {pk: sender._loaded[pk][1] for pk in (first.pk, second.pk)}
    assert cached[first.pk].client is cached[second.pk].client, "one client object for its destinations"
    owed = owed_files.next_owed(first.pk)
    with CaptureQueriesContext(connection) as queries:
        assert sender._destination(first.pk, owed.row_versions) is cached[first.pk]
    assert len(queries) == 0
    assert sender.drain(first.pk) == sender.Outcome.DRAINED

    second.name = "renamed"
    second.save()
    reloaded = sender._destination(second.pk, owed_files.next_owed(second.pk).row_versions)
    assert reloaded is not cached[second.pk] and reloaded.name == "renamed"


def test_a_redis_destination_gets_its_owed_files_in_pushes_of_many_with_a_proof_for_each(
        small_games, subscribe, monkeypatch, clean_redis):
    from omnium.transports.redis import RedisTransport

    monkeypatch.setattr(RedisTransport, "files_per_push", 4)  # small pushes, to see several
    pushes, push_many, send = [], RedisTransport.push_many, RedisTransport.send

    def counted_push_many(transport, files, deadline):  # the real push, its size noted
        pushes.append(len(files))
        return push_many(transport, files, deadline)

    def counted_send(transport, *args, **options):  # a push of one file
        pushes.append(1)
        return send(transport, *args, **options)

    monkeypatch.setattr(RedisTransport, "push_many", counted_push_many)
    monkeypatch.setattr(RedisTransport, "send", counted_send)
    settings = redis_destination_settings()
    destination = subscribe(small_games, settings, feed_types=("calendar", "medals", "results", "country"))
    owed = DeliveryState.objects.filter(destination=destination)
    assert owed.count() >= 9

    assert sender.drain(destination.pk) == sender.Outcome.DRAINED

    stored = redis.Redis.from_url(REDIS_TEST_URL)
    for state in owed.all():
        document = FeedDocument.objects.get(doc_key=state.doc_key)
        assert state.sent_seq == document.seq and state.receipt == f"stored v={document.seq}"
        assert int(stored.hget(f"{settings[1]['key_prefix']}{state.sent_path}", "v")) == document.seq
    assert set(DeliveryAttempt.objects.filter(destination=destination).values_list("ok", flat=True)) == {True}
    assert sorted(pushes, reverse=True)[:2] == [4, 4] and sum(pushes) == owed.count()
    assert SenderState.objects.get(destination=destination).lease_token is None, "the last proof let it go"


def test_a_file_that_fails_in_a_push_of_many_is_dead_lettered_and_the_others_get_their_proofs(
        small_games, subscribe):
    from omnium.delivery.engine.backoff import Gate, gate

    settings = redis_destination_settings()
    destination = subscribe(small_games, settings, feed_types=("calendar", "medals", "results"))
    sender.drain(destination.pk)  # loaded once: the next drain pushes in batches
    states = list(DeliveryState.objects.filter(destination=destination).order_by("doc_key"))
    taken = states[1]
    redis.Redis.from_url(REDIS_TEST_URL).set(f"{settings[1]['key_prefix']}{taken.sent_path}", "not a hash")
    DeliveryState.objects.filter(destination=destination).update(force_resend=True)

    assert sender.drain(destination.pk) == sender.Outcome.FAILED

    failed = DeliveryState.objects.get(pk=taken.pk)
    assert failed.force_resend and failed.dead_lettered_at is not None and "WRONGTYPE" in failed.last_error
    others = DeliveryState.objects.filter(destination=destination).exclude(pk=taken.pk)
    assert not any(state.force_resend for state in others), "the others landed and have their proofs"
    assert gate(destination.pk) == Gate.WAITING, "the destination backs off"


@pytest.mark.servers
def test_one_s3_client_serves_a_destination_across_drains_and_a_new_one_after_its_settings_change(
        small_games, subscribe, s3_kit, monkeypatch):
    """Seed 000 (order of the work 1): one S3 client per destination, reused from send to send
    (boto3's client and its pooled connections are costly to make), replaced when the
    destination's settings change. Transports made are counted at the registry, which the
    sender's cache calls to make one."""
    made = []
    real = transport_registry.transport_for
    monkeypatch.setattr(transport_registry, "transport_for", lambda *args: made.append(args) or real(*args))
    destination = subscribe(small_games, ("s3", s3_kit.config(), s3_kit.credentials()))
    path = f"{small_games.code}/calendar.json"

    for score in (None, 61, 62):
        seq = change_and_rebuild(small_games, score) if score else FeedDocument.objects.get(
            doc_key=f"{small_games.code}/calendar").seq
        assert sender.drain(destination.pk) == sender.Outcome.DRAINED
        assert DeliveryState.objects.get(destination=destination).sent_seq == seq
        assert s3_kit.read_back(path) == bytes(FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar").body)
    assert len(made) == 1, "three drains, one S3 client"

    destination.refresh_from_db()
    destination.config = {**destination.config, "connect_timeout": 3}
    destination.save()
    change_and_rebuild(small_games, 63)
    assert sender.drain(destination.pk) == sender.Outcome.DRAINED
    assert len(made) == 2, "new settings, a new client"
