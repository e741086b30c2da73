import logging
import re

import orjson
import pytest

from omnium.clients import keys
from omnium.clients.models import ApiKey, Client
from omnium.pullapi.catalogue import holder
from omnium.pullapi.log_scrubbing import ScrubApiKeys
from tests.pullapi.conftest import bearer


def problem(response) -> dict:
    assert response["Content-Type"] == "application/problem+json"
    body = orjson.loads(response.content)
    assert body["status"] == response.status_code
    return body


def test_client_name_alone_gets_401(games, entitle, http):
    entitle("acme", games, "medals")
    response = http.get("/getfeeds", {"client": "acme", "feedtype": "medals", "seriesid": games.code})
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert problem(response)["type"] == "urn:omnium:problem:not-authenticated"


def test_valid_key_in_header_or_x_api_key_is_served(games, entitle, http):
    _, key = entitle("acme", games, "medals")
    assert http.get(f"/v1/feeds/{games.code}/medals", **bearer(key)).status_code == 200
    assert http.get(f"/v1/feeds/{games.code}/medals", HTTP_X_API_KEY=key).status_code == 200
    legacy = http.get("/getfeeds", {"client": "acme", "feedtype": "medals", "seriesid": games.code}, **bearer(key))
    assert legacy.status_code == 200


@pytest.mark.parametrize("presented", ["omk_nonsense", "omk_" + "A" * 40, "Bearer-less"])
def test_unknown_or_malformed_key_gets_401(games, entitle, http, presented):
    entitle("acme", games, "medals")
    response = http.get(f"/v1/feeds/{games.code}/medals", HTTP_X_API_KEY=presented)
    assert response.status_code == 401
    assert "Unknown or revoked" in problem(response)["detail"]


def test_key_differing_only_in_its_secret_part_gets_401(games, entitle, http):
    _, key = entitle("acme", games, "medals")
    forged = key[: keys.LOOKUP_LENGTH] + ("B" if key[-1] != "B" else "C") * keys.SECRET_LENGTH
    assert http.get(f"/v1/feeds/{games.code}/medals", **bearer(forged)).status_code == 401


def test_key_is_stored_only_as_its_hash(games, entitle):
    client, key = entitle("acme", games, "medals")
    stored = ApiKey.objects.get(client=client)
    assert stored.key_hash == keys.digest(key) and key not in (stored.key_hash, stored.lookup_id)
    assert stored.lookup_id == key[:12] and key.startswith("omk_")


def test_revoked_key_gets_401_once_the_catalogue_reloads(games, entitle, http):
    client, key = entitle("acme", games, "medals")
    ApiKey.objects.get(client=client).revoke()
    holder.reload()
    assert http.get(f"/v1/feeds/{games.code}/medals", **bearer(key)).status_code == 401


def test_several_active_keys_per_client_for_rotation(games, entitle, http):
    client, old = entitle("acme", games, "medals")
    _, new = ApiKey.issue(client, "rotation")
    holder.reload()
    assert http.get(f"/v1/feeds/{games.code}/medals", **bearer(old)).status_code == 200
    assert http.get(f"/v1/feeds/{games.code}/medals", **bearer(new)).status_code == 200


def test_key_in_query_string_only_for_keys_flagged_legacy(games, entitle, http):
    _, modern = entitle("acme", games, "medals")
    _, legacy = entitle("oldco", games, "medals", key_fields={"query_string_allowed": True})
    params = {"feedtype": "medals", "seriesid": games.code}
    assert http.get("/getfeeds", {**params, "key": modern}).status_code == 401
    assert http.get("/getfeeds", {**params, "key": legacy}).status_code == 200


def test_failed_keys_from_one_address_are_refused_with_429(games, entitle, http, settings):
    settings.OMNIUM = {**settings.OMNIUM, "PULL_FAILED_KEYS_PER_MINUTE": 3}
    _, key = entitle("acme", games, "medals")
    address = {"REMOTE_ADDR": "198.51.100.7"}
    codes = [http.get(f"/v1/feeds/{games.code}/medals", HTTP_X_API_KEY="omk_wrong", **address).status_code
             for _ in range(5)]
    assert codes[:3] == [401, 401, 401] and codes[3:] == [429, 429]
    blocked = http.get(f"/v1/feeds/{games.code}/medals", **bearer(key), **address)
    assert blocked.status_code == 429 and int(blocked["Retry-After"]) > 0  # even a valid key, from there
    assert http.get(f"/v1/feeds/{games.code}/medals", **bearer(key)).status_code == 200  # others unaffected


def test_client_over_its_rate_gets_429(games, entitle, http, settings):
    settings.OMNIUM = {**settings.OMNIUM, "PULL_CLIENT_RATE": 5.0}
    _, key = entitle("acme", games, "medals")
    codes = [http.get(f"/v1/feeds/{games.code}/medals", **bearer(key)).status_code for _ in range(8)]
    assert codes.count(429) >= 1 and codes[0] == 200


def test_log_lines_never_carry_a_key():
    record = logging.LogRecord("granian.access", logging.INFO, "", 0, 'GET /getfeeds?key=%s&feedtype=medals "%s"',
                               ("omk_AbCd1234secretsecretsecretsecretsecret12", "curl"), None)
    ScrubApiKeys().filter(record)
    assert "omk_AbCd1234secret" not in record.getMessage() and "feedtype=medals" in record.getMessage()


def test_a_new_key_is_shown_once_on_a_page_and_never_put_in_a_cookie_or_the_session(games, admin_client):
    client = Client.objects.create(name="acme")

    page = admin_client.post("/admin/clients/apikey/add/", {"client": client.pk, "name": "acme prod"})

    shown = re.findall(r"omk_[A-Za-z0-9]{40}", page.content.decode())
    assert page.status_code == 200 and len(set(shown)) == 1
    key = shown[0]
    assert keys.matches(key, ApiKey.objects.get(client=client).key_hash)
    assert "no-store" in page["Cache-Control"]
    assert all(key not in cookie.value for cookie in page.cookies.values())
    assert all(key not in str(value) for value in admin_client.session.values())
    assert key not in admin_client.get("/admin/clients/apikey/").content.decode()
