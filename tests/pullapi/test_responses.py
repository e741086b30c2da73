import gzip

import orjson

from omnium.feeds.models import FeedDocument
from tests.pullapi.conftest import bearer, fill_pull_cache


def test_matching_etag_gets_304_without_body(games, entitle, http):
    _, key = entitle("acme", games, "medals")
    first = http.get(f"/v1/feeds/{games.code}/medals", **bearer(key))
    etag = first["ETag"]
    for presented in (etag, etag.removeprefix("W/"), f'"other", {etag}'):
        again = http.get(f"/v1/feeds/{games.code}/medals", HTTP_IF_NONE_MATCH=presented, **bearer(key))
        assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    changed = http.get(f"/v1/feeds/{games.code}/medals", HTTP_IF_NONE_MATCH='W/"stale"', **bearer(key))
    assert changed.status_code == 200


def test_gzip_body_is_byte_identical_to_what_was_stored(games, entitle, http, clean_redis):
    _, key = entitle("acme", games, "calendar")
    fill_pull_cache()
    response = http.get(f"/v1/feeds/{games.code}/calendar", HTTP_ACCEPT_ENCODING="gzip, deflate", **bearer(key))
    assert response["Content-Encoding"] == "gzip"
    assert response.content == clean_redis.hget(f"feed:{games.code}/calendar", "gz")
    assert gzip.decompress(response.content) == bytes(FeedDocument.objects.get(doc_key=f"{games.code}/calendar").body)


def test_client_without_gzip_gets_the_plain_body(games, entitle, http):
    _, key = entitle("acme", games, "calendar")
    for accept in ({}, {"HTTP_ACCEPT_ENCODING": "gzip;q=0, identity"}):
        response = http.get(f"/v1/feeds/{games.code}/calendar", **accept, **bearer(key))
        assert "Content-Encoding" not in response
        assert response.content == bytes(FeedDocument.objects.get(doc_key=f"{games.code}/calendar").body)


def test_answers_are_private_and_revalidated(games, entitle, http):
    _, key = entitle("acme", games, "medals")
    response = http.get(f"/v1/feeds/{games.code}/medals", **bearer(key))
    assert response["Cache-Control"] == "private, no-cache" and "Accept-Encoding" in response["Vary"]
    refused = http.get(f"/v1/feeds/{games.code}/medals")
    assert refused["Cache-Control"] == "no-store"


def test_schema_describes_every_endpoint(admin_client):
    schema = admin_client.get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").content
    paths = orjson.loads(schema)["paths"]
    for path in ("/getfeeds", "/v1/feeds/{games}/{feed_type}", "/v1/feeds/{games}/calendar/days/{day}",
                 "/v1/fixtures/{fixture_id}", "/v1/standings/{games}/{unit}", "/v1/medals/{games}",
                 "/v1/athletes/{athlete_id}/career"):
        assert path in paths, path


def test_staff_get_the_browsable_api(games, http, admin_user):
    http.force_login(admin_user)
    response = http.get(f"/v1/feeds/{games.code}/medals", HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and b"<html" in response.content.lower()
    as_json = http.get(f"/v1/feeds/{games.code}/medals")
    assert orjson.loads(as_json.content)["feed"]["type"] == "medals"
