"""Behaviour only real server processes can show: several processes, a Redis that goes away."""

import gzip
import subprocess
import time

import pytest
import requests

from omnium.clients.models import ApiKey
from omnium.feeds.models import FeedDocument
from tests.pullapi.servers import ApiServer, PrivateRedis

pytestmark = pytest.mark.servers


@pytest.fixture
def two_api_processes(games):
    servers = [ApiServer(f"pull-api-{n}") for n in (1, 2)]
    yield servers
    for server in servers:
        server.stop()


def test_revoked_key_fails_within_a_second_on_every_api_process(games, entitle, two_api_processes):
    client, key = entitle("acme", games, "medals")
    headers = {"Authorization": f"Bearer {key}"}
    for server in two_api_processes:
        assert requests.get(f"{server.url}/v1/feeds/{games.code}/medals", headers=headers).status_code == 200
    ApiKey.objects.get(client=client).revoke()
    revoked_at = time.monotonic()
    pending = set(range(len(two_api_processes)))
    while pending and time.monotonic() - revoked_at < 3:
        for n in list(pending):
            url = f"{two_api_processes[n].url}/v1/feeds/{games.code}/medals"
            if requests.get(url, headers=headers).status_code == 401:
                pending.discard(n)
    assert not pending
    assert time.monotonic() - revoked_at < 1.0


@pytest.fixture
def private_redis():
    redis = PrivateRedis()
    yield redis
    redis.stop()


def test_redis_stopped_files_in_memory_are_still_served_with_their_age(games, entitle, private_redis):
    _, key = entitle("acme", games, "medals", "calendar")
    server = ApiServer("pull-api-redis-down", OMNIUM_PULL_REDIS_URL=private_redis.url)
    try:
        medals = f"{server.url}/v1/feeds/{games.code}/medals"
        headers = {"Authorization": f"Bearer {key}"}
        first = requests.get(medals, headers=headers)  # read from PostgreSQL, kept in memory and Redis
        assert first.status_code == 200 and "Age" not in first.headers
        private_redis.stop()
        time.sleep(1.5)
        again = requests.get(medals, headers=headers)
        assert again.status_code == 200 and again.content == first.content
        assert int(again.headers["Age"]) >= 1
        unchanged = requests.get(medals, headers={**headers, "If-None-Match": first.headers["ETag"]})
        assert unchanged.status_code == 304 and "Age" in unchanged.headers
        # A file never read before comes from PostgreSQL (limited), still without Redis.
        calendar = requests.get(f"{server.url}/v1/feeds/{games.code}/calendar", headers=headers)
        assert calendar.status_code == 200
    finally:
        server.stop()


def test_curl_compressed_and_etag_compare(games, entitle, two_api_processes, tmp_path):
    _, key = entitle("acme", games, "calendar")
    url = f"{two_api_processes[0].url}/v1/feeds/{games.code}/calendar"
    auth = ["-H", f"Authorization: Bearer {key}"]
    stored = bytes(FeedDocument.objects.get(doc_key=f"{games.code}/calendar").body)
    etags = tmp_path / "etag"
    plain = subprocess.run(["curl", "-sf", "--compressed", "--etag-save", str(etags), *auth, url],
                           capture_output=True, check=True).stdout
    assert plain == stored
    raw = subprocess.run(["curl", "-sf", "-H", "Accept-Encoding: gzip", *auth, url],
                         capture_output=True, check=True).stdout
    assert gzip.decompress(raw) == stored
    conditional = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                                  "--etag-compare", str(etags), *auth, url], capture_output=True, check=True).stdout
    assert conditional == b"304 0"
