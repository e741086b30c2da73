"""The proof of delivery never claims more than happened: it names the exact bytes the
receiver holds, for every transport."""

import hashlib
import uuid

from omnium.delivery import sender
from omnium.delivery.models import DeliveryState
from omnium.feeds.models import FeedDocument

# The real servers and one kit per kind, run for every kind by the `kit` fixture.
from tests.transports.conftest import (  # noqa: F401
    ftp_kit,
    ftp_server,
    kit,
    redis_db,
    redis_kit,
    s3_kit,
    s3_server,
    sftp_kit,
    sftp_server,
    webhook_kit,
    webhook_receiver,
)


def test_proof_records_the_sha256_of_the_bytes_the_receiver_holds(kit, small_games, subscribe):
    kit.key_prefix = f"proof-{uuid.uuid4().hex[:12]}:"  # Redis: versions restart with each test database
    destination = subscribe(small_games, (kit.kind, kit.config(), kit.credentials()), transform="xml")
    document = FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar")

    assert sender.drain(destination.pk) == sender.DRAINED

    state = DeliveryState.objects.get(destination=destination)
    held = kit.read_back(state.sent_path)
    assert held is not None and held != bytes(document.body), "the transform changed the bytes"
    assert bytes(state.sent_bytes_sha256) == hashlib.sha256(held).digest()
    assert bytes(state.sent_hash) == bytes(document.content_hash), "the content hash stays beside it"
    assert state.sent_bytes == len(held)
