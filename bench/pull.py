#!/usr/bin/env python
"""Benchmark of the pull API: requests a second and p99 through the real key, entitlement and
read path, against a bare Django view reading one Redis key, in the same server, same run.

Runs granian (the production server, see omnium/pullapi/serving.py) on loopback and wrk
(Debian's package: apt-get install wrk), one thread, 32 connections. Uses its own PostgreSQL database
(omnium_bench), a RabbitMQ vhost and Redis database (3) of its own, and its own redis-server for the
pull cache (so "Redis down" can be shown without touching the machine's Redis). Prints one
JSON object. Usage: .venv/bin/python bench/pull.py [--seconds 10]

Besides speed it measures staleness: while wrk polls the file as a real client does (sending
back the last ETag it got), a new version is stored every WRITE_EVERY_S through the Redis
destination's own transport, and each server process logs when it first serves each version;
`staleness_p99_ms` is, over the versions, how long until every process served it (or a newer
one). `redis_commands_per_hit` is the pull cache Redis's INFO commandstats delta over the API
rounds (all commands but INFO) per request served.

And it floods the admin's sign-in (bench/login_flood.py: random users from random addresses, so
no lockout applies and each attempt costs a password hash) beside a wrk run of 304s: once with
the admin in a process of its own (OMNIUM_SERVES=admin, as production runs it), once through
the admin of API servers that serve it too (OMNIUM_SERVES=all, the layout before); `login_flood_p99_ratio` is the p99 beside the
separate admin's flood over the quiet p99 of the same minute (issue 31: within 2x).
"""

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
SEED = 98
CONNECTIONS = 32
# One wrk thread: on two cores, a second one only competes with the servers for them, and a wrk
# thread waiting for a core holds finished answers unread, which wrk counts as the server's
# latency. Same server, same run, 304s: two threads p99 5-27 ms, one thread 5.5-8 ms, requests
# a second alike (one thread drives 18,000 a second, more than the servers answer).
WRK_THREADS = 1
# As deploy/systemd/omnium-admin.service runs the admin: CPUSchedulingPolicy=idle, so that the
# admin gets only the CPU the API processes leave (decision 006 has the measurements).
ADMIN_LAUNCHER = ("chrt", "--idle", "0")
# The pull API's targets (seed 000, D15; issue 31 for the login flood): each figure in the JSON
# is marked met or not under "targets".
TARGETS = {
    "ratio_304": (">=", 3.0),  # against the bare Django view reading one Redis key, same server
    "p99_ms_304": ("<=", 10.0),
    "rps_304": (">=", 5000),
    "login_flood_p99_ratio": ("<=", 2.0),
}
ROUNDS = 3
WRITE_EVERY_S = 0.1
# A polling client: sends back the ETag of its last answer, so each new version costs it one 200.
FOLLOW_ETAG_LUA = """
local etag = nil
request = function()
  local headers = {}
  for name, value in pairs(wrk.headers) do headers[name] = value end
  headers["If-None-Match"] = etag
  return wrk.format(nil, nil, headers)
end
response = function(status, headers, body)
  etag = headers["etag"] or headers["ETag"] or etag
end
"""


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# --- the server side: the API plus a bare baseline view, in one WSGI application ----------

_wsgi = None
_baseline_files: dict = {}


def application(environ, start_response):
    """granian's target (`bench.pull:application`): omnium's URLs plus /bench/baseline/…"""
    global _wsgi
    if _wsgi is None:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnium.settings")
        os.environ.setdefault("DJANGO_DEBUG", "true")  # as setup_environment, when granian starts us alone
        import django

        from omnium.pullapi.serving import prepare_api_process

        prepare_api_process()  # as omnium/wsgi.py does
        django.setup()
        from django.conf import settings

        from omnium.pullapi.keyed_requests import api_application

        settings.ROOT_URLCONF = "bench.pull"
        _wsgi = api_application()  # as omnium/wsgi.py serves
    if environ.get("PATH_INFO") == os.environ.get("BENCH_WATCHED_PATH"):
        return _wsgi(environ, _logging_served_etag(start_response))
    return _wsgi(environ, start_response)


_last_served_etag = None


def _logging_served_etag(start_response):
    """start_response, noting when this process serves another ETag of the watched file (once
    per version per process, so it costs the measured requests nothing worth counting)."""

    def logging_start_response(status, headers, exc_info=None):
        global _last_served_etag
        etag = next((value for name, value in headers if name.lower() == "etag"), None)
        if etag is not None and etag != _last_served_etag:
            _last_served_etag = etag
            with open(Path(os.environ["BENCH_SERVED_LOG_DIR"]) / f"served-{os.getpid()}", "a") as log_file:
                log_file.write(f"{time.monotonic()} {etag}\n")  # CLOCK_MONOTONIC: one clock for all processes
        return start_response(status, headers, exc_info)

    return logging_start_response


def __getattr__(name):
    if name != "urlpatterns":
        raise AttributeError(name)
    from django.urls import path

    from omnium.urls import urlpatterns

    return [path("bench/baseline/<path:key>", baseline), *urlpatterns]


def baseline(request, key):
    """The bare view: one Redis read of the key's version, then the body kept in memory."""
    from django.http import HttpResponse, HttpResponseNotModified

    from omnium.pullapi.pull_redis import pull_redis

    version = pull_redis().hget(key, "v")
    kept = _baseline_files.get(key)
    if kept is None or kept[0] != version:
        _, etag, gz = pull_redis().hmget(key, ["v", "etag", "gz"])
        kept = _baseline_files[key] = (version, f'W/"{etag.decode()}"', gz)
    if request.META.get("HTTP_IF_NONE_MATCH") == kept[1]:
        return HttpResponseNotModified()
    response = HttpResponse(kept[2], content_type="application/json")
    response["Content-Encoding"] = "gzip"
    return response


# --- the driver ----------------------------------------------------------------------------


def setup_environment(pull_redis_url: str) -> None:
    """As every benchmark (bench/environment.py); the API servers take this environment too."""
    os.environ["OMNIUM_PULL_REDIS_URL"] = pull_redis_url
    os.environ["OMNIUM_PULL_CLIENT_RATE"] = "1000000000"  # measure serving, not the throttle
    # The login flood's X-Forwarded-For is believed from loopback, as from a load balancer.
    os.environ["OMNIUM_PULL_TRUSTED_PROXIES"] = "127.0.0.1/32"
    sys.path.insert(0, str(ROOT))
    from bench.environment import prepare

    prepare("omnium_bench", redis_db=3)


def start_private_redis(port: int, workdir: str):
    from devtools.processes import ManagedProcess

    process = ManagedProcess(
        [shutil.which("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir], "bench-pull-redis")
    process.wait_for_port(port)
    return process


def prepare_games():
    """A small Games, every file built, the pull cache filled by the real Redis destinations."""
    from django.core.management import call_command

    from devtools.generator import Generator, delete_games, games_code
    from omnium.clients.models import ApiKey, Client, Destination, Entitlement
    from omnium.delivery.engine import sender
    from omnium.feeds.builder import build_file, files_of
    from omnium.feeds.models import FeedDefinition
    from omnium.pullapi import pull_cache_destinations

    call_command("migrate", verbosity=0)
    # Our clients first: their subscriptions and entitlements point at the Games' definitions.
    Client.objects.filter(name__in=["bench", pull_cache_destinations.SYSTEM_CLIENT]).delete()
    delete_games(games_code("small", SEED))
    games = Generator("small", SEED).run()
    for doc_key in files_of(games.code):
        build_file(doc_key)
    pull_cache_destinations.ensure_destinations(games)
    pull_cache_destinations.build_missing(games)
    for destination_id in Destination.objects.filter(kind="redis").values_list("pk", flat=True):
        sender.drain(destination_id)
    client = Client.objects.create(name="bench")
    for definition in FeedDefinition.objects.filter(games=games):
        Entitlement.objects.create(client=client, definition=definition)
    _, key = ApiKey.issue(client, "bench")
    return games, key


def five_kb_file(games):
    """The file whose gzipped body (what a gzip-accepting client receives) is nearest 5 KB."""
    from omnium.pullapi.pull_redis import pull_redis

    best = None
    for redis_key in pull_redis().scan_iter(f"feed:{games.code}/*"):
        gz = pull_redis().hget(redis_key, "gz")
        if best is None or abs(len(gz) - 5120) < abs(best[1] - 5120):
            best = (redis_key.decode(), len(gz))
    redis_key, size = best
    etag = pull_redis().hget(redis_key, "etag").decode()
    return redis_key, size, f'W/"{etag}"'


def wrk(url: str, headers: dict, seconds: int, script: str | None = None) -> dict:
    args = ["wrk", f"-t{WRK_THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", url]
    if script is not None:
        args[1:1] = ["-s", script]
    for name, value in headers.items():
        args[1:1] = ["-H", f"{name}: {value}"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
    p99_ms = float(p99.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = int(non_2xx.group(1)) if non_2xx else 0
    return {"rps": round(rps), "p99_ms": round(p99_ms, 2), "requests": total, "bad_responses": errors}


def combined(rounds: list[dict]) -> dict:
    """Requests a second over all rounds; p99 as the median of the rounds' p99s."""
    p99s = sorted(r["p99_ms"] for r in rounds)
    return {"rps": round(sum(r["rps"] for r in rounds) / len(rounds)), "p99_ms": p99s[len(p99s) // 2],
            "requests": sum(r["requests"] for r in rounds), "bad_responses": sum(r["bad_responses"] for r in rounds)}


def database_transactions() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def redis_commands() -> int:
    """Commands the pull cache Redis has served, but the INFO that asks."""
    from omnium.pullapi.pull_redis import pull_redis

    stats = pull_redis().info("commandstats")
    return sum(entry["calls"] for name, entry in stats.items() if name != "cmdstat_info")


def counting_redis_commands(run):
    """run() with the pull cache Redis's commands during it added as "redis_commands"."""
    before = redis_commands()
    result = run()
    return {**result, "redis_commands": redis_commands() - before}


def write_versions_while(running: threading.Thread, redis_url: str, redis_key: str) -> list[tuple]:
    """A new version of the file every WRITE_EVERY_S while `running` runs, stored as a Redis
    destination stores it; returns (etag, version, monotonic time the store was acknowledged).
    The time is taken when the transport returns, not before it is called: before, it would
    count the transport's own gzip and set-up (milliseconds, more on a busy machine) as staleness."""
    from omnium.pullapi.pull_redis import pull_redis
    from omnium.transports.redis import RedisTransport

    transport = RedisTransport({"url": redis_url, "key_prefix": "feed:"}, {})
    version = int(pull_redis().hget(redis_key, "v"))
    body = gzip.decompress(pull_redis().hget(redis_key, "gz"))
    time.sleep(1.0)  # every connection has had its first answer
    written = []
    while running.is_alive():
        version += 1
        etag = f"bench-{version}"
        transport.send(body + b" " * (version % 64), redis_key.removeprefix("feed:"),
                       content_type="application/json", version=version, etag=etag)
        written.append((f'W/"{etag}"', version, time.monotonic()))
        time.sleep(WRITE_EVERY_S)
    return written


def served_logs(log_dir: str) -> dict[str, list[tuple[float, str]]]:
    """Per process, (monotonic time, ETag) each time it began serving another ETag."""
    logs = {}
    for path in Path(log_dir).glob("served-*"):
        lines = path.read_text().split("\n")
        logs[path.name] = [(float(line.split(" ", 1)[0]), line.split(" ", 1)[1]) for line in lines if line]
    return logs


def staleness(written: list[tuple], logs: dict) -> dict:
    """For each written version, how long until every process served it or a newer one."""
    version_of = {etag: version for etag, version, _ in written}
    delays, never_everywhere, older_after_newer = [], 0, 0
    for entries in logs.values():
        versions = [version_of.get(etag, 0) for _, etag in entries]
        older_after_newer += sum(1 for a, b in zip(versions, versions[1:]) if b < a)
    measured = written[:-3]  # the last ones may be written as wrk stops: no one left to serve them
    for _, version, written_at in measured:
        firsts = [next((t for t, etag in entries if version_of.get(etag, 0) >= version), None)
                  for entries in logs.values()]
        if None in firsts:
            never_everywhere += 1
        else:
            delays.append(max(firsts) - written_at)
    delays = sorted(delays) or [float("nan")]
    log(f"staleness: the slowest ten (ms): {[round(d * 1000, 1) for d in delays[-10:]]}")
    return {
        "versions_written": len(measured), "processes_seen": len(logs),
        "versions_not_served_by_every_process": never_everywhere,
        "staleness_p50_ms": round(delays[len(delays) // 2] * 1000, 2),
        "staleness_p99_ms": round(delays[min(len(delays) - 1, int(len(delays) * 0.99))] * 1000, 2),
        "staleness_max_ms": round(delays[-1] * 1000, 2),
        "served_older_after_newer": older_after_newer,
    }


def measure_staleness(api: str, auth: dict, seconds: int, redis_url: str, redis_key: str, workdir: str,
                      log_dir: str) -> dict:
    script = Path(workdir) / "follow_etag.lua"
    script.write_text(FOLLOW_ETAG_LUA)
    result = {}
    polling = threading.Thread(target=lambda: result.update(wrk(api, auth, seconds, str(script))))
    polling.start()
    written = write_versions_while(polling, redis_url, redis_key)
    polling.join()
    return {**staleness(written, served_logs(log_dir)), "rps_while_writing": result["rps"],
            "bad_responses": result["bad_responses"]}


def server_environment() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    return env


def start_servers(port: int, workers: int, serves: str = "api"):
    """The API servers as production runs them (OMNIUM_SERVES=api: no admin, no page-only
    middleware), the bare baseline view beside; `serves="all"` for the layout with the admin in
    the same process."""
    from devtools.processes import start_api

    return start_api(port, f"bench-pull-{serves}", {**server_environment(), "OMNIUM_SERVES": serves},
                     workers=workers, target="bench.pull:application")


def targets_met(result: dict) -> dict:
    """{figure: {"target": ">= 3.0", "met": True}} for each of TARGETS."""
    met = {}
    for figure, (comparison, bound) in TARGETS.items():
        value = result.get(figure)
        ok = value is not None and (value >= bound if comparison == ">=" else value <= bound)
        met[figure] = {"target": f"{comparison} {bound}", "value": value, "met": ok}
    return met


def combined_floods(floods: list[dict]) -> dict:
    answers = Counter()
    for flood in floods:
        answers.update(flood["answers"])
    return {"attempts": sum(f["attempts"] for f in floods),
            "attempts_per_s": round(sum(f["attempts_per_s"] for f in floods) / len(floods), 1),
            "answers": dict(answers)}


def login_flood(api: str, conditional: dict, workers: int, seconds: int) -> dict:
    """304s quiet, beside a flooded admin process of its own, and beside a flood of the API
    server's own admin (servers that serve everything: OMNIUM_SERVES=all)."""
    from bench.login_flood import LoginFlood
    from devtools.processes import free_port, start_api

    admin_port = free_port()
    # As deploy/systemd/omnium-admin.service runs it, so that on a shared host the CPU a flood of
    # password hashes takes is what the API processes leave.
    admin = start_api(admin_port, "bench-pull-admin", {**server_environment(), "OMNIUM_SERVES": "admin"},
                      workers=1, threads=4, launcher=ADMIN_LAUNCHER)
    # Quiet and flooded rounds alternate, so that whatever else the machine does weighs on both.
    quiet_rounds, apart_rounds, apart_floods = [], [], []
    try:
        wrk(api, conditional, 2)
        for _ in range(ROUNDS):
            quiet_rounds.append(wrk(api, conditional, seconds))
            flood = LoginFlood(f"http://127.0.0.1:{admin_port}").start()
            apart_rounds.append(wrk(api, conditional, seconds))
            apart_floods.append(flood.stop())
    finally:
        admin.stop()
    quiet, apart, apart_flood = combined(quiet_rounds), combined(apart_rounds), combined_floods(apart_floods)
    all_port = free_port()
    serving_all = start_servers(all_port, workers, serves="all")
    try:
        all_api = api.replace(urlsplit(api).netloc, f"127.0.0.1:{all_port}")
        wrk(all_api, conditional, 2)
        flood = LoginFlood(f"http://127.0.0.1:{all_port}").start()
        shared = wrk(all_api, conditional, seconds)
        shared_flood = flood.stop()
    finally:
        serving_all.stop()
    for name, run in (("quiet", quiet), ("admin apart, flooded", apart), ("same process's admin flooded", shared)):
        log(f"login flood, {name}: {run}")
    log(f"login flood: admin apart {apart_flood}, same process {shared_flood}")
    return {"p99_ms_304_quiet": quiet["p99_ms"], "rps_304_quiet": quiet["rps"],
            "p99_ms_304_login_flood_admin_apart": apart["p99_ms"], "rps_304_login_flood_admin_apart": apart["rps"],
            "login_flood_attempts_per_s_admin_apart": apart_flood["attempts_per_s"],
            "login_flood_answers_admin_apart": apart_flood["answers"],
            "login_flood_p99_ratio": round(apart["p99_ms"] / quiet["p99_ms"], 2),
            "p99_ms_304_login_flood_same_process": shared["p99_ms"], "rps_304_login_flood_same_process": shared["rps"],
            "login_flood_attempts_per_s_same_process": shared_flood["attempts_per_s"],
            "login_flood_bad_responses": apart["bad_responses"] + shared["bad_responses"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=12, help="per kind of run, split into rounds")
    # At one version every WRITE_EVERY_S, 20 s make some 200 versions: a p99 that is not simply
    # the slowest one (6 s made 46, and p99 was the maximum).
    parser.add_argument("--staleness-seconds", type=int, default=20)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--flood-seconds", type=int, default=4, help="per round of the login flood")
    options = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing: apt-get install -y wrk")

    sys.path.insert(0, str(ROOT))
    from devtools.processes import free_port

    redis_port, api_port = free_port(), free_port()
    workdir = tempfile.mkdtemp(prefix="bench-pull-")
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    setup_environment(redis_url)
    log_dir = Path(workdir) / "served"
    log_dir.mkdir()
    redis_process = start_private_redis(redis_port, workdir)
    server = None
    try:
        log("generating a small Games and filling the pull cache")
        games, key = prepare_games()
        redis_key, gz_bytes, etag = five_kb_file(games)
        doc_key = redis_key.removeprefix("feed:")
        api = f"http://127.0.0.1:{api_port}/v1/feeds/{doc_key}"
        os.environ.update(BENCH_WATCHED_PATH=f"/v1/feeds/{doc_key}", BENCH_SERVED_LOG_DIR=str(log_dir))
        base = f"http://127.0.0.1:{api_port}/bench/baseline/{redis_key}"
        auth = {"Authorization": f"Bearer {key}", "Accept-Encoding": "gzip"}
        conditional = {**auth, "If-None-Match": etag}
        from django.db import connections

        log(f"serving {doc_key} ({gz_bytes} bytes gzipped) with granian, {options.workers} workers")
        server = start_servers(api_port, options.workers)
        wrk(api, conditional, 2), wrk(base, conditional, 2), wrk(api, auth, 1)  # warm every worker
        connections.close_all()
        time.sleep(1.5)  # our own connection's statistics (the set-up) are flushed when it closes
        before = database_transactions()
        connections.close_all()
        runs = {name: [] for name in ("304", "200_5kb", "baseline_304", "baseline_200_5kb")}
        # API and baseline alternate in short rounds, so anything else the machine does in the
        # meantime weighs on both alike.
        round_s = max(2, options.seconds // ROUNDS)
        for _ in range(ROUNDS):
            for name, url, headers in (("304", api, conditional), ("baseline_304", base, conditional),
                                       ("200_5kb", api, auth), ("baseline_200_5kb", base, auth)):
                runs[name].append(counting_redis_commands(lambda u=url, h=headers: wrk(u, h, round_s)))
        api_redis_commands = sum(r["redis_commands"] for name in ("304", "200_5kb") for r in runs[name])
        runs = {name: combined(rounds) for name, rounds in runs.items()}
        for name, run in runs.items():
            log(f"{name}: {run}")
        server.stop()
        server = None
        time.sleep(1.0)  # the servers' connections are closed: their statistics are flushed
        api_requests = runs["304"]["requests"] + runs["200_5kb"]["requests"]
        queries = (database_transactions() - before - 1) / api_requests
        connections.close_all()

        log(f"staleness: restarting the servers; a new version every {WRITE_EVERY_S} s while wrk polls")
        for old_log in log_dir.iterdir():  # the stopped processes' logs
            old_log.unlink()
        server = start_servers(api_port, options.workers)
        wrk(api, conditional, 2)
        stale_versions = measure_staleness(api, auth, options.staleness_seconds, redis_url, redis_key, workdir,
                                           str(log_dir))
        log(f"staleness: {stale_versions}")
        flooded = login_flood(api, conditional, options.workers, options.flood_seconds)

        log("Redis down: warming the servers again, stopping the pull cache Redis")
        wrk(api, conditional, 2)
        redis_process.stop()
        down = wrk(api, conditional, options.seconds)
        log(f"304 with Redis down: {down}")
        stale = subprocess.run(["curl", "-s", "-o", "/dev/null", "-D", "-", *sum((["-H", f"{k}: {v}"] for k, v in
                                conditional.items()), []), api], capture_output=True, text=True).stdout
        result = {
            "server": f"granian wsgi, {options.workers} workers x 1 blocking thread",
            "file": doc_key, "file_gzip_bytes": gz_bytes, "connections": CONNECTIONS, "wrk_threads": WRK_THREADS,
            "seconds_per_run": round_s * ROUNDS,
            "rps_304": runs["304"]["rps"], "rps_200_5kb": runs["200_5kb"]["rps"],
            "p99_ms_304": runs["304"]["p99_ms"], "p99_ms_200_5kb": runs["200_5kb"]["p99_ms"],
            "baseline_rps_304": runs["baseline_304"]["rps"], "baseline_rps_200_5kb": runs["baseline_200_5kb"]["rps"],
            "baseline_p99_ms_304": runs["baseline_304"]["p99_ms"],
            "ratio_304": round(runs["304"]["rps"] / runs["baseline_304"]["rps"], 3),
            "ratio_200_5kb": round(runs["200_5kb"]["rps"] / runs["baseline_200_5kb"]["rps"], 3),
            "db_queries_per_request": round(max(0.0, queries), 5),
            "redis_commands_per_hit": round(api_redis_commands / api_requests, 5),
            **{name: value for name, value in stale_versions.items() if name != "bad_responses"},
            "rps_304_redis_down": down["rps"], "p99_ms_304_redis_down": down["p99_ms"],
            "redis_down_answer_has_age": "\nage:" in stale.lower(),
            **flooded,
            "bad_responses": (sum(r["bad_responses"] for r in runs.values()) + down["bad_responses"]
                              + stale_versions["bad_responses"]),
        }
        result["targets"] = targets_met(result)
        print(json.dumps(result))
    finally:
        if server is not None:
            server.stop()
        redis_process.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
