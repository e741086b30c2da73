import base64
import ipaddress
import logging
import re
import threading
import time
import uuid

import orjson
import pytest

from omnium import redis_keys
from omnium.clients import key_format
from omnium.clients.models import ApiKey, Client
from omnium.pullapi import failed_keys
from omnium.pullapi.catalogue import holder
from omnium.pullapi.log_scrubbing import ScrubApiKeys
from omnium.pullapi.pull_redis import pull_redis
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
    assert "Unknown, revoked or expired" in problem(response)["detail"]


def test_key_differing_only_in_its_secret_part_gets_401(games, entitle, http):
    _, key = entitle("acme", games, "medals")
    forged = key[: key_format.LOOKUP_LENGTH] + ("B" if key[-1] != "B" else "C") * key_format.SECRET_LENGTH
    assert http.get(f"/v1/feeds/{games.code}/medals", **bearer(forged)).status_code == 401


def test_key_is_stored_only_as_its_hash(games, entitle):
    client, key = entitle("acme", games, "medals")
    stored = ApiKey.objects.get(client=client)
    assert stored.key_hash == key_format.digest(key) and key not in (stored.key_hash, stored.lookup_id)
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


def guesses(http, games, key: str, count: int, **meta) -> list[int]:
    """`count` attempts with `key` changed in its secret part (its prefix kept): a guess at it."""
    forged = key[: key_format.LOOKUP_LENGTH] + ("B" if key[-1] != "B" else "C") * key_format.SECRET_LENGTH
    return [http.get(f"/v1/feeds/{games.code}/medals", **bearer(forged), **meta).status_code for _ in range(count)]


def test_guessing_a_key_is_refused_with_429_but_its_owner_is_still_served(games, entitle, http, settings):
    settings.OMNIUM = {**settings.OMNIUM, "PULL_FAILED_KEYS_PER_MINUTE": 3}
    _, key = entitle("acme", games, "medals")
    address = {"REMOTE_ADDR": "198.51.100.7"}

    codes = guesses(http, games, key, 5, **address)

    assert codes[:3] == [401, 401, 401] and codes[3:] == [429, 429]
    blocked = http.get(f"/v1/feeds/{games.code}/medals", HTTP_X_API_KEY="omk_wrong", **address)
    assert blocked.status_code == 401, "another prefix is counted on its own"
    assert http.get(f"/v1/feeds/{games.code}/medals", **bearer(key), **address).status_code == 200


def test_failures_are_counted_per_client_behind_a_trusted_proxy_never_per_proxy(games, entitle, http, settings):
    settings.OMNIUM = {**settings.OMNIUM, "PULL_FAILED_KEYS_PER_MINUTE": 3,
                       "PULL_TRUSTED_PROXIES": (ipaddress.ip_network("10.0.0.0/8"),)}
    _, key = entitle("acme", games, "medals")
    attacker = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "203.0.113.66"}
    neighbour = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "203.0.113.5"}

    assert guesses(http, games, key, 4, **attacker)[-1] == 429

    assert guesses(http, games, key, 1, **neighbour) == [401], "the proxy's address is not the client's"
    # From outside the proxies, X-Forwarded-For is ignored: it can neither borrow another
    # client's count nor escape its own; nor does a hop added before the proxy's.
    assert guesses(http, games, key, 1, REMOTE_ADDR="203.0.113.88", HTTP_X_FORWARDED_FOR="203.0.113.5") == [401]
    assert guesses(http, games, key, 4, REMOTE_ADDR="203.0.113.66", HTTP_X_FORWARDED_FOR="192.0.2.1")[-1] == 429
    assert guesses(http, games, key, 1, REMOTE_ADDR="10.0.0.2",
                   HTTP_X_FORWARDED_FOR="192.0.2.9, 203.0.113.66") == [429]


def redis_commands_naming(text: str, during) -> list[str]:
    """The Redis commands (as MONITOR sees them, from every process) whose arguments hold
    `text`, sent while `during()` runs."""
    seen, end_mark = [], f"end-of-{uuid.uuid4()}"
    with pull_redis().monitor() as monitor:
        def read():
            while end_mark not in (command := monitor.next_command()["command"]):
                if text in command:
                    seen.append(command)

        reader = threading.Thread(target=read)
        reader.start()
        time.sleep(0.2)  # MONITOR's reply came; the reader waits for commands
        during()
        pull_redis().echo(end_mark)
        reader.join(timeout=10)
    return seen


def test_failures_reach_redis_in_batches_not_one_round_trip_each(games, entitle, http, settings):
    settings.OMNIUM = {**settings.OMNIUM, "PULL_FAILED_KEYS_PER_MINUTE": 1000}
    _, key = entitle("acme", games, "medals")
    address = "198.51.100.77"


    def forty_guesses_then_one_more_later():
        guesses(http, games, key, 40, REMOTE_ADDR=address)
        time.sleep(failed_keys.SYNC_S + 0.1)
        guesses(http, games, key, 1, REMOTE_ADDR=address)  # shares what was counted meanwhile

    if failed_keys.failures.seconds_left() < 10:  # counts are per minute: stay inside one
        time.sleep(failed_keys.failures.seconds_left() + 0.1)
    commands = redis_commands_naming(address, forty_guesses_then_one_more_later)

    incrby = [command for command in commands if command.startswith("INCRBY")]
    assert 2 <= len(incrby) <= 5, commands
    assert sum(int(command.split()[-1].strip("'")) for command in incrby) == 41  # every failure counted


def test_made_up_key_prefixes_are_counted_under_one_name_per_address(games, entitle, http, clean_redis):
    entitle("acme", games, "medals")
    address = "198.51.100.78"
    for number in range(60):
        made_up = key_format.PREFIX + f"{number:0{key_format.ID_LENGTH}d}"
        made_up += "A" * key_format.SECRET_LENGTH
        assert http.get(f"/v1/feeds/{games.code}/medals", **bearer(made_up), REMOTE_ADDR=address).status_code in (401, 429)
    time.sleep(failed_keys.SYNC_S + 0.1)
    http.get(f"/v1/feeds/{games.code}/medals", **bearer("nonsense"), REMOTE_ADDR=address)  # shares what is counted

    assert [key.decode() for key in clean_redis.keys(f"*failed-keys:{address}:*")] == [
        redis_keys.failed_keys(address, failed_keys.NO_SUCH_KEY, int(time.time() // failed_keys.WINDOW_S))]


def test_failures_from_more_pairs_than_a_minute_may_count_are_refused_and_keys_still_served(
        games, entitle, http, clean_redis, monkeypatch):
    monkeypatch.setattr(failed_keys.failures, "max_keys", 30)
    _, key = entitle("acme", games, "medals")
    codes = [guesses(http, games, key, 1, REMOTE_ADDR=f"198.51.100.{number}")[0] for number in range(100, 160)]

    assert codes == [401] * 30 + [429] * 30
    assert failed_keys.failures.keys_counted() == 30
    time.sleep(failed_keys.SYNC_S + 0.1)
    guesses(http, games, key, 1, REMOTE_ADDR="198.51.100.100")  # shares what is counted
    assert len(clean_redis.keys("*failed-keys:*")) == 30
    assert http.get(f"/v1/feeds/{games.code}/medals", **bearer(key), REMOTE_ADDR="198.51.100.200").status_code == 200


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
    assert key_format.matches(key, ApiKey.objects.get(client=client).key_hash)
    assert "no-store" in page["Cache-Control"]
    assert all(key not in cookie.value for cookie in page.cookies.values())
    assert all(key not in str(value) for value in admin_client.session.values())
    assert key not in admin_client.get("/admin/clients/apikey/").content.decode()


def test_the_schema_and_docs_are_for_staff_sessions_only_and_basic_auth_is_refused(games, entitle, http,
                                                                                   admin_client, admin_user):
    _, key = entitle("acme", games, "medals")
    basic = "Basic " + base64.b64encode(b"admin:password").decode()  # pytest-django's admin_user

    assert http.get("/v1/schema").status_code == 403
    assert http.get("/v1/schema", **bearer(key)).status_code == 403
    assert http.get("/v1/schema", HTTP_AUTHORIZATION=basic).status_code == 403
    assert http.get(f"/v1/feeds/{games.code}/medals", HTTP_AUTHORIZATION=basic).status_code == 401
    assert http.get("/v1/docs", **bearer(key)).status_code == 302  # to the admin login
    assert admin_client.get("/v1/schema").status_code == 200
    assert admin_client.get("/v1/docs").status_code == 200
