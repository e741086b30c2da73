import gzip

import orjson

from omnium.clients import packages
from omnium.clients.models import ApiKey, Client, Entitlement, Package
from omnium.feeds import record_ids
from omnium.games.models import Fixture
from omnium.pullapi import pull_cache_destinations
from omnium.pullapi.catalogue import holder
from tests.clients.test_packages import make_package
from tests.pullapi.conftest import bearer, fill_pull_cache


def test_file_not_entitled_gets_403(games, entitle, http):
    _, key = entitle("acme", games, "medals")
    response = http.get(f"/v1/feeds/{games.code}/calendar", **bearer(key))
    assert response.status_code == 403
    assert orjson.loads(response.content)["type"] == "urn:omnium:problem:not-entitled"


def test_one_country_entitlement_grants_only_that_country(games, entitle, http):
    _, key = entitle("acme", games, "country", filter="IND")
    assert http.get(f"/v1/feeds/{games.code}/country/IND", **bearer(key)).status_code == 200
    assert http.get(f"/v1/feeds/{games.code}/country/CHN", **bearer(key)).status_code == 403
    legacy = http.get("/getfeeds", {"feedtype": "country_IND", "seriesid": games.code}, **bearer(key))
    assert legacy.status_code == 200 and orjson.loads(legacy.content)["feed"]["filter"] == "IND"


def test_unknown_games_feed_or_file_gets_404_for_staff_and_for_a_file_the_key_is_entitled_to(
        games, entitle, http, admin_client):
    _, key = entitle("acme", games, "country")
    assert http.get(f"/v1/feeds/{games.code}/country/ZZZ", **bearer(key)).status_code == 404
    for path in ("/v1/feeds/nope/medals", f"/v1/feeds/{games.code}/nonsense", f"/v1/feeds/{games.code}/country/ZZZ"):
        assert admin_client.get(path).status_code == 404, path


def test_malformed_parameters_get_400(games, entitle, http):
    _, key = entitle("acme", games, "calendar", "country")
    # (A well-formed address of no file, such as a per-country feed without its country, is a
    # 404: test_schema_contract.py.)
    for path in (f"/v1/feeds/{games.code}/country/I$D", f"/v1/feeds/{games.code}/calendar/days/2026-13-45",
                 "/v1/fixtures/not-a-uuid", "/getfeeds?feedtype=medals"):
        response = http.get(path, **bearer(key))
        assert response.status_code == 400, path
        assert response["Content-Type"] == "application/problem+json"


def test_client_a_key_cannot_read_client_b_transformed_file(games, entitle, http):
    client_b, key_b = entitle("bravo", games, "medals", transform="xml")
    _, key_a = entitle("alpha", games, "medals")
    pull_cache_destinations.ensure_destinations(games)  # bravo's own shape gets its own Redis key
    fill_pull_cache()
    as_b = http.get(f"/v1/feeds/{games.code}/medals", **bearer(key_b))
    as_a = http.get(f"/v1/feeds/{games.code}/medals", **bearer(key_a))
    assert as_b.status_code == as_a.status_code == 200
    assert as_b.content.startswith(b"<?xml") and as_b["Content-Type"] == "application/xml"
    assert as_a.content.startswith(b"{") and as_a["Content-Type"] == "application/json"
    named_b = http.get("/getfeeds", {"client": "bravo", "feedtype": "medals", "seriesid": games.code}, **bearer(key_a))
    assert named_b.status_code == 403


def test_own_shape_is_published_to_the_clients_own_redis_key(games, entitle, http, clean_redis):
    client, key = entitle("bravo", games, "medals", transform="legacy", include_version=True)
    pull_cache_destinations.ensure_destinations(games)
    fill_pull_cache()
    stored = clean_redis.hgetall(f"feed:{client.pk}:{client.shape.tag}:{games.code}/medals")
    published = orjson.loads(gzip.decompress(stored[b"gz"]))
    assert published["FeedType"] == "medals" and published["Version"] == int(stored[b"v"])
    served = http.get(f"/v1/feeds/{games.code}/medals", HTTP_ACCEPT_ENCODING="gzip", **bearer(key))
    assert served.content == stored[b"gz"]


def test_calendar_entitlement_grants_its_days_and_fixtures(games, entitle, http):
    _, key = entitle("acme", games, "calendar")
    fixture = Fixture.objects.filter(games=games).order_by("starts_at").first()
    day = http.get(f"/v1/feeds/{games.code}/calendar/days/{fixture.starts_at.date()}", **bearer(key))
    assert day.status_code == 200
    assert str(fixture.pk) in {f["id"] for f in orjson.loads(day.content)["data"]["fixtures"]}
    one = http.get(f"/v1/feeds/{games.code}/calendar/fixtures/{fixture.pk}", **bearer(key))
    assert one.status_code == 200 and orjson.loads(one.content)["data"]["fixture"]["id"] == str(fixture.pk)
    assert record_ids.expand(record_ids.compact(fixture.pk)) == fixture.pk


def test_applying_a_package_entitles_a_client_to_pull_its_files(games, http):
    client = Client.objects.create(name="bravo")
    _, key = ApiKey.issue(client, "production")
    holder.reload()
    url = f"/v1/feeds/{games.code}/medals"
    assert http.get(url, **bearer(key)).status_code == 403

    applied = packages.entitle(make_package(games, "medals", "results"), client)
    packages.entitle(Package.objects.get(), client)
    holder.reload()

    assert applied.created == 2 and Entitlement.objects.filter(client=client).count() == 2
    assert http.get(url, **bearer(key)).status_code == 200
    assert http.get(f"/v1/feeds/{games.code}/results", **bearer(key)).status_code == 200
    assert http.get(f"/v1/feeds/{games.code}/calendar", **bearer(key)).status_code == 403
