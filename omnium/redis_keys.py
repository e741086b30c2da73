"""Every Redis key and channel Omnium uses: its pattern, owner, type and lifetime, in one place.

Redis holds hints, caches and health only (PostgreSQL is the record): any key here may vanish
with a Redis restart, and its owner rebuilds or does without it. Two servers: REDIS_URL (hints,
health, counters) and OMNIUM_PULL_REDIS_URL (the pull cache; the same server by default).
`KEYS` is the map, tabled in docs/operations/redis-keys.md; a test replays work through every
part and checks that each key found in Redis matches one of its patterns.
"""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class RedisKey:
    pattern: str  # {name} stands for a variable part
    server: str  # "main" (REDIS_URL) or "pull" (OMNIUM_PULL_REDIS_URL)
    kind: str  # the Redis type, or "channel"
    lifetime: str
    owner: str  # the module that writes it
    meaning: str

    def regex(self) -> re.Pattern:
        """A variable part is one segment (no ":" or "/"); an address may be IPv6 (colons)."""
        def part(match: re.Match) -> str:
            return r"[0-9A-Fa-f.:]+" if match.group(1) == "address" else r"[^:/]+"
        return re.compile(re.sub(r"\\\{(\w+)\\\}", part, re.escape(self.pattern)))


# --- main Redis --------------------------------------------------------------------------------

def kick_on_its_way(destination_id: int) -> str:
    return f"omnium:kick-on-its-way:{destination_id}"


def destination_health(destination_id: int) -> str:
    return f"omnium:dest:{destination_id}"


EVENT_LOG = "omnium:events"
WORKERS = "omnium:workers"


def worker(name: str) -> str:
    return f"omnium:worker:{name}"


def worker_destinations(name: str) -> str:
    return f"omnium:worker:{name}:destinations"


def build_wake(lane: str) -> str:
    return f"omnium:build-wake:{lane}"


BUILD_COUNTER = "omnium:builds"
CONTROL_CHANNEL = "omnium:control"

# --- the pull cache's Redis ------------------------------------------------------------------------

SHARED_FILE_PREFIX = "feed:"
PUBLIC_FILE_PREFIX = "pub:"
CATALOGUE_CHANNEL = "omnium:pull:catalogue"


def own_shape_prefix(client_id: int, shape_tag: str) -> str:
    return f"{SHARED_FILE_PREFIX}{client_id}:{shape_tag}:"


def failed_keys(address: str, key_prefix: str, window: int) -> str:
    return f"omnium:pull:failed-keys:{address}:{key_prefix}:{window}"


def client_rate(client_id: int, window: int) -> str:
    return f"omnium:pull:rate:{client_id}:{window}"


KEYS = [
    RedisKey("omnium:kick-on-its-way:{destination}", "main", "string", "10 s + 1 s per 200 kicks of its batch",
             "omnium.delivery.kicks", "a kick is on its way: the sweeper does not kick again"),
    RedisKey("omnium:dest:{destination}", "main", "hash", "until the destination is deleted",
             "omnium.delivery.health", "status, errors in a row, last error and success, back-off"),
    RedisKey(EVENT_LOG, "main", "list", "the newest 200 entries", "omnium.delivery.health",
             "delivery events for the status screens (failing, recovered, paused…)"),
    RedisKey(WORKERS, "main", "set", "members leave when their heartbeat expires", "omnium.delivery.heartbeats",
             "the live delivery workers' names"),
    RedisKey("omnium:worker:{name}", "main", "string", "3 heartbeats", "omnium.delivery.heartbeats",
             "a delivery worker's heartbeat"),
    RedisKey("omnium:worker:{name}:destinations", "main", "set", "3 heartbeats", "omnium.delivery.heartbeats",
             "the destinations a delivery worker consumes"),
    RedisKey("omnium:build-wake:{lane}", "main", "string", "its wake-up time + 60 s", "omnium.feeds.hints",
             "a build_due task is scheduled for this lane at this time: no second one"),
    RedisKey(BUILD_COUNTER, "main", "hash", "for good (counters)", "omnium.feeds.tasks",
             "builds by outcome, for the demo and dashboards"),
    RedisKey(CONTROL_CHANNEL, "main", "channel", "", "omnium.delivery.operations.control",
             "pause, resume and cut a send now, to every delivery worker"),
    RedisKey("feed:{games}/{feed_type}", "pull", "hash", "for good (a destination's) or 60 s (a fill)",
             "omnium.transports.redis, omnium.pullapi.read_path", "a file as built: v, etag, gz"),
    RedisKey("feed:{games}/{feed_type}/{filter}", "pull", "hash", "as above", "omnium.transports.redis",
             "a per-country (or other filtered) file as built"),
    RedisKey("feed:{client}:{shape}:{games}/{feed_type}", "pull", "hash", "as above", "omnium.transports.redis",
             "a file in one client's own shape (and /{filter})"),
    RedisKey("feed:{client}:{shape}:{games}/{feed_type}/{filter}", "pull", "hash", "as above",
             "omnium.transports.redis", "a filtered file in one client's own shape"),
    RedisKey("pub:{feed_type}/{filter}", "pull", "hash", "as above", "omnium.transports.redis",
             "a public document (a fixture, a unit's standings, a Games' medals, a career)"),
    RedisKey("omnium:pull:failed-keys:{address}:{key}:{window}", "pull", "string", "2 windows of 60 s",
             "omnium.pullapi.failed_keys", "failed key attempts per client address and key prefix"),
    RedisKey("omnium:pull:rate:{client}:{window}", "pull", "string", "5 s", "omnium.pullapi.throttles",
             "a client's requests in one second, summed over API processes"),
    RedisKey(CATALOGUE_CHANNEL, "pull", "channel", "", "omnium.pullapi.change_notices",
             "clients, keys or entitlements changed: every API process reloads its catalogue"),
]


def owner_of(key: str) -> RedisKey | None:
    """The map's entry whose pattern `key` matches (a whole match), or None."""
    for entry in KEYS:
        if entry.kind != "channel" and entry.regex().fullmatch(key):
            return entry
    return None


# --- the pull cache's own Redis user ------------------------------------------------------------
# What OMNIUM_PULL_REDIS_URL's user may do on the pull cache's server, and nothing more: its keys
# and channels (KEYS above, server "pull"), and the commands the API processes and the pull
# cache's destinations run (reads, write-if-newer scripts, counters, notices, client-side caching).
# No other key (a client's Redis destination on the same server), no FLUSHALL, CONFIG, KEYS,
# DEBUG or SHUTDOWN. docs/operations/redis-keys.md shows the command that creates it.
PULL_CACHE_KEY_PATTERNS = ("feed:*", "pub:*", "omnium:pull:*")
PULL_CACHE_CHANNELS = (CATALOGUE_CHANNEL, "__redis__:invalidate")
PULL_CACHE_COMMANDS = (
    "+ping", "+hello", "+client|id", "+client|setname", "+client|tracking",
    "+get", "+set", "+hget", "+hmget", "+hgetall", "+hset", "+del", "+unlink", "+expire", "+ttl", "+incr", "+incrby",
    "+persist", "+eval", "+evalsha", "+script|load", "+script|exists", "+publish", "+subscribe", "+unsubscribe",
)


def pull_cache_acl_rules(password: str) -> list[str]:
    """The ACL SETUSER rules (after the user name) of the pull cache's own user."""
    return ["reset", "on", f">{password}", *(f"~{pattern}" for pattern in PULL_CACHE_KEY_PATTERNS),
            *(f"&{channel}" for channel in PULL_CACHE_CHANNELS), *PULL_CACHE_COMMANDS]
