"""Behaviour only real server processes can show: several processes, a Redis that goes away."""

import gzip
import subprocess
import threading
import time
from collections import Counter

import orjson
import pytest
import redis
import requests
from django.contrib.auth.models import User
from django.test import Client as HttpClient

from devtools.sentinel_redis import SentinelRedis
from omnium import redis_keys
from omnium.clients.models import ApiKey
from omnium.feeds.models import FeedDocument
from omnium.pullapi.invalidations import CLIENT_NAME
from omnium.transports import TransportError
from omnium.transports.redis import RedisTransport
from tests.child_processes import LOG_DIR
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


def test_a_revoked_key_whose_notice_is_lost_stops_working_within_the_catalogue_age(games, entitle, private_redis):
    """Seed 000, D14: a revoked key fails within 1 s by its notice, and within the catalogue's
    maximum age (60 s; 3 s here) when the notice never arrives. This server listens to another
    Redis than the one the revocation's notice is published on, so it never hears of it."""
    max_age_s = 3
    server = ApiServer("pull-api-deaf", OMNIUM_PULL_REDIS_URL=private_redis.url,
                       OMNIUM_PULL_CATALOGUE_MAX_AGE_S=max_age_s)
    try:
        client, key = entitle("acme", games, "medals")
        url, headers = f"{server.url}/v1/feeds/{games.code}/medals", {"Authorization": f"Bearer {key}"}
        _wait_until(lambda: requests.get(url, headers=headers).status_code == 200, "the key known")
        ApiKey.objects.get(client=client).revoke()
        revoked_at = time.monotonic()
        _wait_until(lambda: requests.get(url, headers=headers).status_code == 401, "the revoked key refused",
                    max_age_s + 5)
        assert time.monotonic() - revoked_at <= max_age_s + 1.5
    finally:
        server.stop()


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


# --- the invalidation channel across real processes ------------------------------------------


@pytest.fixture
def staff_cookie(transactional_db):
    """A staff session for the read path's health figure (/v1/health/read-path)."""
    staff = User.objects.create_user("ops", is_staff=True)
    browser = HttpClient()
    browser.force_login(staff)
    return {"sessionid": browser.cookies["sessionid"].value}


def _health(server, staff_cookie) -> dict:
    return requests.get(f"{server.url}/v1/health/read-path", cookies=staff_cookie).json()


def _wait_until(condition, what: str, timeout: float = 10.0) -> None:
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout, f"not within {timeout} s: {what}"
        time.sleep(0.01)


def _served_version(server, games, key) -> int:
    """The version a process serves (the bodies stored below say which one they are)."""
    response = requests.get(f"{server.url}/v1/feeds/{games.code}/medals", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200
    return orjson.loads(response.content).get("stored_version", 0)


def _store_version(redis_url: str, games, version: int) -> None:
    """What a Redis destination does when a new version of the medals file is built."""
    transport = RedisTransport({"url": redis_url, "key_prefix": "feed:"}, {})
    body = orjson.dumps({"stored_version": version})
    transport.send(body, f"{games.code}/medals", content_type="application/json", version=version, etag=f"e{version}")


def _listening_with_medals(servers, games, key, staff_cookie) -> None:
    """Every process has the medals confirmed by Redis under a listening channel."""
    for server in servers:
        _wait_until(lambda s=server: _health(s, staff_cookie)["invalidations"] == "listening", "listening")
        for _ in range(3):  # from PostgreSQL (written to Redis), then confirmed by Redis
            _served_version(server, games, key)


@pytest.fixture
def two_api_processes_on_private_redis(games, private_redis):
    servers = [ApiServer(f"pull-api-private-{n}", OMNIUM_PULL_REDIS_URL=private_redis.url) for n in (1, 2)]
    yield servers
    for server in servers:
        server.stop()


@pytest.mark.alone  # a 100 ms bound: three other test processes on two cores would decide it, not the code
def test_hits_ask_redis_nothing_and_every_process_serves_a_new_version_within_100_ms(
        games, entitle, private_redis, two_api_processes_on_private_redis, staff_cookie):
    servers = two_api_processes_on_private_redis
    _, key = entitle("acme", games, "medals")
    _listening_with_medals(servers, games, key, staff_cookie)
    before = private_redis.commands_run()
    for server in servers:
        for _ in range(50):
            _served_version(server, games, key)
    assert private_redis.commands_run() - before == Counter()
    for version in (10_001, 10_002, 10_003):
        _store_version(private_redis.url, games, version)
        stored_at = time.monotonic()
        for server in servers:
            _wait_until(lambda s=server, v=version: _served_version(s, games, key) == v, "the new version", timeout=1.0)
            assert time.monotonic() - stored_at < 0.1


def test_after_a_redis_restart_no_process_serves_a_version_older_than_redis_holds(
        games, entitle, private_redis, two_api_processes_on_private_redis, staff_cookie):
    servers = two_api_processes_on_private_redis
    _, key = entitle("acme", games, "medals")
    _store_version(private_redis.url, games, 20_000)
    _listening_with_medals(servers, games, key, staff_cookie)
    assert [_served_version(server, games, key) for server in servers] == [20_000, 20_000]
    private_redis.restart()
    # Refilled before the processes are back on the channel: no invalidation will name it.
    _store_version(private_redis.url, games, 20_001)
    for server in servers:
        _wait_until(lambda s=server: _health(s, staff_cookie)["channel_breaks"] == 1
                    and _health(s, staff_cookie)["invalidations"] == "listening", "back and listening")
    assert [_served_version(server, games, key) for server in servers] == [20_001, 20_001]
    before = private_redis.commands_run()
    assert [_served_version(server, games, key) for server in servers] == [20_001, 20_001]
    assert private_redis.commands_run() - before == Counter()  # resynchronised: hits are free of Redis again


def test_with_the_invalidation_channel_cut_a_process_asks_redis_and_serves_the_newest(
        games, entitle, private_redis, staff_cookie):
    admin = private_redis.client()
    admin.execute_command("ACL", "SETUSER", "api", "on", ">api-secret", "~*", "&*", "+@all")
    server = ApiServer("pull-api-cut", OMNIUM_PULL_REDIS_URL=f"redis://api:api-secret@127.0.0.1:{private_redis.port}/0")
    try:
        _, key = entitle("acme", games, "medals")
        _listening_with_medals([server], games, key, staff_cookie)
        admin.execute_command("ACL", "SETUSER", "api", "-client|tracking")  # it cannot come back...
        channel = next(c for c in admin.client_list() if c["name"] == CLIENT_NAME)
        admin.client_kill_filter(_id=channel["id"])  # ...once cut
        _wait_until(lambda: _health(server, staff_cookie)["invalidations"].startswith("down"), "the cut is noticed")
        for version in (30_001, 30_002, 30_003):
            _store_version(private_redis.url, games, version)
            assert _served_version(server, games, key) == version  # at once: Redis was asked
        admin.execute_command("ACL", "SETUSER", "api", "+client|tracking")
        _wait_until(lambda: _health(server, staff_cookie)["invalidations"] == "listening", "the channel is back")
        _served_version(server, games, key)  # confirmed once more in the new generation
        before = private_redis.commands_run()
        assert _served_version(server, games, key) == 30_003
        assert private_redis.commands_run() - before == Counter()
    finally:
        server.stop()


def test_the_pull_caches_own_redis_user_serves_and_publishes_and_can_touch_nothing_else(
        games, entitle, private_redis, staff_cookie):
    """Issue 31: the pull cache's Redis reachable with a user of its own, limited to its key
    patterns, channels and commands (omnium.redis_keys.pull_cache_acl_rules, the rules the docs
    tell operators to create): an API process serves and listens under it, a Redis destination
    publishes new versions with it, and it can read or write no other key and run no admin command."""
    admin = private_redis.client()
    admin.execute_command("ACL", "SETUSER", "omnium-pull", *redis_keys.pull_cache_acl_rules("pull-secret"))
    restricted_url = f"redis://127.0.0.1:{private_redis.port}/0"
    server = ApiServer("pull-api-acl", OMNIUM_PULL_REDIS_URL=restricted_url.replace("//", "//omnium-pull:pull-secret@"))
    publisher = RedisTransport({"url": restricted_url, "key_prefix": "feed:"},
                               {"username": "omnium-pull", "password": "pull-secret"})
    try:
        _, key = entitle("acme", games, "medals")
        _listening_with_medals([server], games, key, staff_cookie)  # filled from PostgreSQL, tracked
        for version in (40_001, 40_002):
            publisher.send(orjson.dumps({"stored_version": version}), f"{games.code}/medals",
                           content_type="application/json", version=version, etag=f"e{version}")
            _wait_until(lambda v=version: _served_version(server, games, key) == v, "the new version served")
        refused = requests.get(f"{server.url}/v1/feeds/{games.code}/medals", headers={"Authorization": "Bearer omk_x"})
        assert refused.status_code == 401  # its failed-key count is one of the user's keys
        assert _health(server, staff_cookie)["invalidations"] == "listening"
    finally:
        server.stop()
        publisher.close()

    user = redis.Redis(host="127.0.0.1", port=private_redis.port, username="omnium-pull", password="pull-secret")
    admin.set("client-destination:sm7/medals", "a client's own key on the same server")
    for forbidden in (lambda: user.get("client-destination:sm7/medals"), lambda: user.set("omnium:dest:1", "x"),
                      lambda: user.flushall(), lambda: user.config_get("*"), lambda: user.keys("*")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            forbidden()
    assert admin.get("client-destination:sm7/medals") == b"a client's own key on the same server"


@pytest.fixture
def one_api_process(games):
    server = ApiServer("pull-api-paths")
    yield server
    server.stop()


@pytest.mark.parametrize("path", ["%F0%9F%98%80", "%C3%A9t%C3%A9", "%FF%FE", "caf%C3%A9/%E2%82%AC"])
def test_a_path_with_any_character_is_answered_not_failed(games, entitle, one_api_process, path):
    """Characters beyond Latin-1 in a feed path, with and without a key: a problem (400 or
    404; 401 without a key), never a 500. (A keyed request that was no memory hit reached
    Django with the path a first request had decoded into its environ.)"""
    _, key = entitle("acme", games, "medals")
    url = f"{one_api_process.url}/v1/feeds/{games.code}/{path}"

    with_key = requests.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=10)
    without = requests.get(url, timeout=10)

    assert with_key.status_code in (400, 404), with_key.text[:300]
    assert with_key.headers["Content-Type"] == "application/problem+json"
    assert without.status_code == 401


@pytest.fixture
def sentinel_redis():
    cluster = SentinelRedis("pull-redis-sentinel", log_dir=LOG_DIR)
    yield cluster
    cluster.stop()


@pytest.fixture
def api_behind_sentinel(games, sentinel_redis):
    # As many pulls as two threads make: the client rate limit is not under test.
    server = ApiServer("pull-api-sentinel", OMNIUM_PULL_REDIS_URL=sentinel_redis.url, OMNIUM_PULL_CLIENT_RATE=100_000)
    yield server
    server.stop()


def test_the_primary_killed_mid_load_pulls_go_on_and_writes_resume_on_the_new_primary(
        games, entitle, sentinel_redis, api_behind_sentinel, staff_cookie):
    """Issue 40: the pull cache behind Sentinel loses its primary (SIGKILL) while pulls and a
    stream of new versions run. Pulls keep answering (from memory, with Age, while no primary
    answers), the Redis destination's write-if-newer resumes on the new primary, and no pull
    is served an older version after a newer one."""
    server = api_behind_sentinel
    _, key = entitle("acme", games, "medals")
    _store_version(sentinel_redis.url, games, 40_000)
    _listening_with_medals([server], games, key, staff_cookie)
    load = _PullsAndVersions(server, games, key, sentinel_redis.url, first_version=40_001)
    load.start()
    try:
        time.sleep(1.0)
        old_port = sentinel_redis.kill_primary()
        killed_at = time.monotonic()
        new_port = sentinel_redis.wait_for_failover(old_port)
        _wait_until(lambda: load.stored_since(killed_at) >= 20, "20 versions stored on the new primary", 30)
    finally:
        load.stop()

    assert load.error is None, load.error
    assert load.statuses == {200}, "every pull answered"
    assert load.aged, "while no primary answered, the memory copy was served with its age"
    for served in load.versions_per_reader:
        assert served == sorted(served), "a pull was served an older version after a newer one"
    assert load.first_stored_after(killed_at) - killed_at < 10, "writes resumed within 10 s"
    last = load.stored[-1]
    on_new_primary = redis.Redis("127.0.0.1", new_port).hget(f"feed:{games.code}/medals", "v")
    assert int(on_new_primary) == last, "write-if-newer went on on the new primary"
    _wait_until(lambda: _served_version(server, games, key) == last, "the API serves the newest version", 5)


class _PullsAndVersions:
    """Two threads pulling the medals file as fast as they can, and one storing a new version
    of it every 50 ms through the Redis destination's transport."""

    def __init__(self, server, games, key, redis_url: str, first_version: int):
        self.server, self.games, self.key = server, games, key
        self.transport = RedisTransport({"url": redis_url, "key_prefix": "feed:", "connect_timeout": 0.5,
                                         "send_timeout": 2.0}, {})
        self.next_version = first_version
        self.stored: list[int] = []
        self.stored_at: list[float] = []
        self.versions_per_reader: list[list[int]] = [[], []]
        self.statuses: set[int] = set()
        self.aged = 0
        self.error: BaseException | None = None
        self._stopping = threading.Event()
        self._threads = [threading.Thread(target=self._guarded, args=(self._pull, n)) for n in (0, 1)]
        self._threads.append(threading.Thread(target=self._guarded, args=(self._write,)))

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(10)

    def stored_since(self, moment: float) -> int:
        return sum(1 for at in self.stored_at if at > moment)

    def first_stored_after(self, moment: float) -> float:
        return next(at for at in self.stored_at if at > moment)

    def _guarded(self, work, *args) -> None:
        try:
            work(*args)
        except BaseException as exc:  # reported by the test, not lost in a thread
            self.error = exc

    def _pull(self, reader: int) -> None:
        session = requests.Session()
        url = f"{self.server.url}/v1/feeds/{self.games.code}/medals"
        while not self._stopping.is_set():
            response = session.get(url, headers={"Authorization": f"Bearer {self.key}"}, timeout=5)
            self.statuses.add(response.status_code)
            if response.status_code == 200:
                self.versions_per_reader[reader].append(orjson.loads(response.content)["stored_version"])
                self.aged += "Age" in response.headers

    def _write(self) -> None:
        while not self._stopping.wait(0.05):
            version = self.next_version
            body = orjson.dumps({"stored_version": version})
            try:
                self.transport.send(body, f"{self.games.code}/medals", content_type="application/json",
                                    version=version, etag=f"e{version}")
            except TransportError:
                continue  # no primary yet: the same version again, as the sender's retry would
            self.stored.append(version)
            self.stored_at.append(time.monotonic())
            self.next_version += 1
