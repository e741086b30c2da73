"""One shape per client, pulled and pushed: a change reaches both at once, without a new version."""

import orjson
import pytest

from omnium.clients.models import Client
from omnium.delivery.engine import sender
from omnium.delivery.models import DeliveryAttempt
from omnium.feeds.models import FeedDocument
from omnium.pullapi.catalogue import holder
from tests.delivery.fixtures import webhook_settings
from tests.pullapi.conftest import bearer, fill_pull_cache


@pytest.fixture
def upkeep_on(settings):
    settings.OMNIUM = {**settings.OMNIUM, "PULL_CACHE_AUTOMATIC": True}


def own_key(client: Client, doc_key: str) -> str:
    return f"feed:{client.pk}:{client.shape.tag}:{doc_key}"


def test_a_new_client_shape_is_pulled_under_a_new_etag_and_pushed_again_with_proof(
        games, entitle, subscribe, receiver, http, clean_redis, upkeep_on):
    client, key = entitle("bravo", games, "medals", transform="xml")
    destination = subscribe(games, webhook_settings(receiver.url), ("medals",), client="bravo")
    fill_pull_cache()
    assert sender.drain(destination.pk) == sender.Outcome.DRAINED
    url = f"/v1/feeds/{games.code}/medals"
    before = http.get(url, **bearer(key))
    assert before.status_code == 200 and before.content.startswith(b"<?xml")
    old_key = own_key(client, f"{games.code}/medals")

    client.transform = "legacy"
    client.full_clean()
    client.save()  # as the admin does
    holder.reload()  # what the change notice makes every API process do
    fill_pull_cache()
    assert sender.drain(destination.pk) == sender.Outcome.DRAINED

    after = http.get(url, HTTP_IF_NONE_MATCH=before["ETag"], **bearer(key))
    assert after.status_code == 200, "the old ETag names the old shape: not a 304"
    assert after["ETag"] != before["ETag"] and orjson.loads(after.content)["FeedType"] == "medals"
    seq = FeedDocument.objects.get(doc_key=f"{games.code}/medals").seq
    new_key = own_key(client, f"{games.code}/medals")
    assert int(clean_redis.hget(new_key, "v")) == seq and clean_redis.ttl(new_key) == -1, \
        "published by the own-shape destination under the new shape's key, for good"
    assert not clean_redis.exists(old_key), "the old shape's key went with it"
    assert orjson.loads(receiver.deliveries[-1].body)["FeedType"] == "medals", "pushed again in the new shape"
    proofs = DeliveryAttempt.objects.filter(destination=destination, ok=True).values_list("seq", flat=True)
    assert list(proofs) == [seq, seq], "the same version, proved twice"


def test_a_client_back_to_json_as_built_is_served_the_shared_file_under_a_new_etag(
        games, entitle, http, clean_redis, upkeep_on):
    client, key = entitle("bravo", games, "medals", include_version=True)
    fill_pull_cache()
    url = f"/v1/feeds/{games.code}/medals"
    before = http.get(url, **bearer(key))
    assert "version" in orjson.loads(before.content)
    old_key = own_key(client, f"{games.code}/medals")

    client.include_version = False
    client.save()
    holder.reload()

    after = http.get(url, HTTP_IF_NONE_MATCH=before["ETag"], **bearer(key))
    assert after.status_code == 200 and "version" not in orjson.loads(after.content)
    assert after["ETag"] == f'W/"{FeedDocument.objects.get(doc_key=f"{games.code}/medals").content_hash.hex()}"'
    assert not clean_redis.exists(old_key), "its own-shape subscriptions retired, their keys deleted"


def test_every_shape_has_its_own_tag_and_only_as_built_files_keep_the_plain_content_hash():
    from omnium.clients.shapes import AS_BUILT, Shape

    shapes = [Shape(t, v, m) for t in ("json", "xml", "legacy") for v in (False, True) for m in (False, True)]
    assert len({shape.tag for shape in shapes}) == len(shapes)
    assert AS_BUILT.etag("abc") == "abc"
    assert Shape("xml").etag("abc") == f"abc-{Shape('xml').tag}"
