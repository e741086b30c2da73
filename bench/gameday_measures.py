"""What bench/gameday.py measures, from PostgreSQL's record of every attempt and version and
from the receivers' own logs. Times are the machine's clock, which every process shares."""

import threading
import time
from collections import defaultdict
from datetime import datetime

import requests
from django.db import connection

from devtools.latency import percentile

PARKED_AFTER_S = 300 + 30  # the slow retry pace (5 min) and a margin for its jitter and a busy worker


def _rows(sql: str, params) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def p(values, fraction):
    value = percentile(values, fraction)
    return None if value is None else round(value, 3)


def ages(destination_ids, after_seq: int, up_to_seq: int | None = None) -> list[float]:
    """Proof ages (changed_at -> confirmed) of the versions after `after_seq` (up to `up_to_seq`)."""
    sql = """SELECT age_ms / 1000.0 FROM delivery_deliveryattempt WHERE ok AND age_ms IS NOT NULL
             AND destination_id = ANY(%s) AND seq > %s AND seq <= %s"""
    return [float(row[0]) for row in _rows(sql, [list(destination_ids), after_seq, up_to_seq or 2**62])]


FIRST_CONFIRMED_AFTER = """
SELECT a.destination_id, EXTRACT(EPOCH FROM MIN(a.started_at + a.duration_ms * interval '1 millisecond') - %(end)s)
FROM delivery_deliveryattempt a JOIN feeds_feedversion v ON v.seq = a.seq
WHERE a.ok AND v.committed_at > %(end)s AND a.destination_id = ANY(%(ids)s)
GROUP BY a.destination_id
"""


def recovery(end: datetime, destination_ids) -> dict:
    """From `end` to the first confirmed send of a version committed after it: at the first
    destination (delivery resumed) and at the last one (every destination resumed)."""
    seconds = [float(row[1]) for row in _rows(FIRST_CONFIRMED_AFTER, {"end": end, "ids": list(destination_ids)})]
    missing = len(set(destination_ids)) - len(seconds)
    return {"recovery_first_s": p(seconds, 0.0), "recovery_s": round(max(seconds), 3) if seconds else None,
            "destinations_without_a_newer_version": missing}


CONFIRMED_BETWEEN = """
SELECT destination_id, EXTRACT(EPOCH FROM started_at + duration_ms * interval '1 millisecond')
FROM delivery_deliveryattempt
WHERE ok AND NOT is_test AND destination_id = ANY(%(ids)s)
    AND started_at + duration_ms * interval '1 millisecond' BETWEEN %(start)s AND %(end)s
"""


def longest_gap(start: datetime, end: datetime, destination_ids) -> float:
    """The longest time, between `start` and `end`, that any of these destinations went
    without a confirmed send."""
    moments = {destination_id: [start.timestamp()] for destination_id in destination_ids}
    for destination_id, confirmed in _rows(CONFIRMED_BETWEEN, {"ids": list(destination_ids), "start": start,
                                                               "end": end}):
        moments[destination_id].append(float(confirmed))
    return round(max(_longest_step([*sorted(times), end.timestamp()]) for times in moments.values()), 3)


def _longest_step(moments: list[float]) -> float:
    return max(later - earlier for earlier, later in zip(moments, moments[1:]))


FIRST_CONFIRMED_AT = """
SELECT EXTRACT(EPOCH FROM MIN(started_at + duration_ms * interval '1 millisecond') - %(end)s)
FROM delivery_deliveryattempt WHERE ok AND destination_id = %(id)s
    AND started_at + duration_ms * interval '1 millisecond' > %(end)s
"""


def destination_recovery(end: datetime, destination_id: int) -> float | None:
    """From `end` to the destination's first confirmed send (of any version: its backlog too)."""
    value = _rows(FIRST_CONFIRMED_AT, {"end": end, "id": destination_id})[0][0]
    return None if value is None else round(float(value), 3)


VERSIONS_LOST = """
SELECT s.destination_id, s.doc_key, s.sent_seq, GREATEST(s.wanted_seq, d.seq)
FROM delivery_state s JOIN feeds_feeddocument d ON d.doc_key = s.doc_key
WHERE s.destination_id = ANY(%s) AND s.sent_seq < GREATEST(s.wanted_seq, d.seq)
"""


def versions_lost(destination_ids) -> list[tuple]:
    """(destination, file, sent, current) for every file a destination has not got the current version of."""
    return _rows(VERSIONS_LOST, [list(destination_ids)])


OLDER_AFTER_NEWER = """
SELECT count(*) FROM (
    SELECT seq, MAX(seq) OVER (PARTITION BY destination_id, doc_key
                               ORDER BY started_at + duration_ms * interval '1 millisecond', id
                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS newest_before
    FROM delivery_deliveryattempt WHERE ok AND destination_id = ANY(%s)) confirmed
WHERE seq < newest_before
"""


def older_after_newer_in_attempts(destination_ids) -> int:
    return _rows(OLDER_AFTER_NEWER, [list(destination_ids)])[0][0]


def older_after_newer_at_webhooks(receivers) -> tuple[int, int]:
    """(older versions accepted after newer ones, deliveries checked), per (receiver URL, file),
    from what each receiver accepted (2xx, signature verified) in the order it arrived."""
    newest, older, checked = defaultdict(int), 0, 0
    for receiver in receivers:
        for delivery in list(receiver.deliveries):
            headers = {name.lower(): value for name, value in delivery.headers.items()}
            if not (delivery.verified and 200 <= delivery.status < 300 and "omnium-version" in headers):
                continue
            key, version = (id(receiver), delivery.path, headers.get("omnium-path")), int(headers["omnium-version"])
            older += version < newest[key]
            newest[key] = max(newest[key], version)
            checked += 1
    return older, checked


PARKED = """
SELECT count(*) FROM delivery_deliveryattempt f
WHERE f.ok IS NOT TRUE AND f.destination_id = ANY(%(ids)s) AND f.started_at >= %(since)s
  AND f.started_at < clock_timestamp() - %(after)s * interval '1 second'
  AND NOT EXISTS (SELECT 1 FROM delivery_deliveryattempt n
                  WHERE n.destination_id = f.destination_id AND n.doc_key = f.doc_key AND n.id <> f.id
                    AND n.started_at >= f.started_at
                    AND n.started_at <= f.started_at + %(after)s * interval '1 second')
"""

OWED_UNTRIED = """
SELECT count(*) FROM delivery_state
WHERE destination_id = ANY(%(ids)s) AND sent_seq < wanted_seq
  AND COALESCE(last_attempt_at, wanted_at) < clock_timestamp() - %(after)s * interval '1 second'
"""


def files_parked(destination_ids, since: datetime) -> int:
    """Failed (or cut) attempts not followed by another try of the same file within
    PARKED_AFTER_S, and files owed now that nothing has tried for that long."""
    params = {"ids": list(destination_ids), "since": since, "after": PARKED_AFTER_S}
    return _rows(PARKED, params)[0][0] + _rows(OWED_UNTRIED, params)[0][0]


STALENESS = """
SELECT EXTRACT(EPOCH FROM clock_timestamp() - MIN(v.committed_at)) FROM feeds_feedversion v
WHERE v.doc_key = %(key)s AND v.seq > COALESCE(
    (SELECT MAX(seq) FROM feeds_feedversion WHERE doc_key = %(key)s AND content_hash = %(hash)s), 0)
"""


class PullClient(threading.Thread):
    """Polls the pull API for `paths` throughout the day (with If-None-Match, as a client
    would) and keeps, per poll, how long ago a version newer than the one served was
    committed: 0 when the served version is the newest."""

    def __init__(self, base_url: str, key: str, files: dict[str, str], interval_s: float = 0.25):
        super().__init__(name="pull-client", daemon=True)
        self.base_url, self.files, self.interval_s = base_url, files, interval_s
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Bearer {key}", "Accept-Encoding": "gzip"})
        self.etags: dict[str, str] = {}
        self.stale_s: list[float] = []
        self.polls = self.errors = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopping.wait(self.interval_s):
                for path, doc_key in self.files.items():
                    self._poll(path, doc_key)
        finally:
            connection.close()  # this thread's own connection

    def _poll(self, path: str, doc_key: str) -> None:
        try:
            headers = {"If-None-Match": self.etags[path]} if path in self.etags else {}
            reply = self.session.get(self.base_url + path, headers=headers, timeout=10)
            if reply.status_code not in (200, 304):
                raise RuntimeError(f"{path}: {reply.status_code}")
            self.etags[path] = reply.headers["ETag"]
            served_hash = bytes.fromhex(reply.headers["ETag"].removeprefix("W/").strip('"'))
            stale = _rows(STALENESS, {"key": doc_key, "hash": served_hash})[0][0]
            self.stale_s.append(0.0 if stale is None else float(stale))
            self.polls += 1
        except Exception:  # noqa: BLE001 - an API or database outage: counted, polled again
            self.errors += 1
            connection.close()
            time.sleep(0.5)

    def stop(self) -> dict:
        self.stopping.set()
        self.join()
        return {"pull_stale_max_s": round(max(self.stale_s), 3) if self.stale_s else None,
                "pull_stale_p95_s": p(self.stale_s, 0.95), "pull_polls": self.polls, "pull_poll_errors": self.errors}
