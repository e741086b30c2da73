"""The freshness report: per client and day, how fresh its files arrived against the promise
(95 % of changes at the client within 10 s), computed from the proofs themselves, every
confirmed send counted, none sampled.

A day's row is summed from the day's delivery attempts (not connection tests): versions sent
(confirmed sends), those whose proof age (the file's newest real change -> confirmed at the
destination) was within 10 s and within 60 s, the median and 95th percentile age, failed
attempts, and the longest outage at any one destination (first failure after a success -> the
next success). Beat sums today and yesterday every hour (rows are replaced), so a day is
complete well before its attempts are pruned (OMNIUM_ATTEMPT_RETENTION_DAYS, 7 days).
"""

import csv
import io
from datetime import UTC, date, datetime, time, timedelta

from django.db import connection

from omnium.reports.models import FreshnessDay

PROMISE_SHARE = 0.95  # of changes at the client within PROMISE_S
PROMISE_S = 10

DAY_OF_PROOFS = """
WITH attempts AS (
    SELECT a.destination_id, a.started_at, a.ok, a.age_ms,
           SUM(CASE WHEN a.ok THEN 1 ELSE 0 END) OVER (PARTITION BY a.destination_id ORDER BY a.started_at, a.id)
               AS successes
    FROM delivery_deliveryattempt a JOIN clients_destination d ON d.id = a.destination_id
    WHERE d.client_id = %(client)s AND NOT a.is_test AND a.ok IS NOT NULL
      AND a.started_at >= %(start)s AND a.started_at < %(end)s
), outages AS (
    SELECT destination_id, successes, MIN(started_at) AS began FROM attempts WHERE NOT ok
    GROUP BY destination_id, successes
), lengths AS (
    SELECT COALESCE((SELECT MIN(s.started_at) FROM attempts s WHERE s.destination_id = o.destination_id
                     AND s.ok AND s.successes = o.successes + 1),
                    LEAST(%(end)s, clock_timestamp())) - o.began AS length
    FROM outages o
)
SELECT COUNT(*) FILTER (WHERE ok),
       COUNT(*) FILTER (WHERE ok AND age_ms <= 10000),
       COUNT(*) FILTER (WHERE ok AND age_ms <= 60000),
       percentile_disc(0.5) WITHIN GROUP (ORDER BY age_ms) FILTER (WHERE ok),
       percentile_disc(0.95) WITHIN GROUP (ORDER BY age_ms) FILTER (WHERE ok),
       COUNT(*) FILTER (WHERE NOT ok),
       COALESCE((SELECT EXTRACT(EPOCH FROM MAX(length)) FROM lengths), 0)
FROM attempts
"""

CLIENTS_WITH_ATTEMPTS = """
SELECT DISTINCT d.client_id FROM delivery_deliveryattempt a JOIN clients_destination d ON d.id = a.destination_id
WHERE a.started_at >= %(start)s AND NOT a.is_test
"""

CSV_COLUMNS = ("day", "versions_sent", "share_within_10s", "share_within_60s", "p50_age_ms", "p95_age_ms",
               "failures", "longest_outage_s")


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time(0), tzinfo=UTC)
    return start, start + timedelta(days=1)


def summarize(client_id: int, day: date) -> FreshnessDay:
    """Sum one client's day from its proofs and store it (replacing an earlier sum of it)."""
    start, end = day_bounds(day)
    with connection.cursor() as cursor:
        cursor.execute(DAY_OF_PROOFS, {"client": client_id, "start": start, "end": end})
        sent, within_10s, within_60s, p50, p95, failures, outage = cursor.fetchone()
    row, _ = FreshnessDay.objects.update_or_create(client_id=client_id, day=day, defaults={
        "versions_sent": sent, "within_10s": within_10s, "within_60s": within_60s, "p50_age_ms": p50,
        "p95_age_ms": p95, "failures": failures, "longest_outage_s": round(float(outage), 3)})
    return row


def summarize_recent(today: date | None = None) -> int:
    """Yesterday and today, for every client with attempts since yesterday; returns the rows."""
    today = today or datetime.now(UTC).date()
    days = [today - timedelta(days=1), today]
    with connection.cursor() as cursor:
        cursor.execute(CLIENTS_WITH_ATTEMPTS, {"start": day_bounds(days[0])[0]})
        clients = [row[0] for row in cursor.fetchall()]
    for client_id in clients:
        for day in days:
            summarize(client_id, day)
    return len(clients) * len(days)


def as_csv(rows) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow([row.day.isoformat(), row.versions_sent, _share(row.share_within_10s),
                         _share(row.share_within_60s), row.p50_age_ms, row.p95_age_ms, row.failures,
                         row.longest_outage_s])
    return out.getvalue()


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def chart_svg(rows, width: int = 600, height: int = 120) -> str:
    """One bar a day (the share within 10 s, oldest on the left) and the 95 % line."""
    rows = [row for row in reversed(list(rows)) if row.versions_sent]
    if not rows:
        return ""
    step = width / len(rows)
    bars = []
    for n, row in enumerate(rows):
        share = row.share_within_10s
        bar = share * height
        colour = "#2e7d32" if share >= PROMISE_SHARE else "#c62828"
        bars.append(f'<rect x="{n * step + 1:.1f}" y="{height - bar:.1f}" width="{max(step - 2, 1):.1f}" '
                    f'height="{bar:.1f}" fill="{colour}"><title>{row.day}: {share:.1%} within {PROMISE_S} s'
                    f'</title></rect>')
    line = height * (1 - PROMISE_SHARE)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="share of changes at the client within {PROMISE_S} s, per day">{"".join(bars)}'
            f'<line x1="0" x2="{width}" y1="{line:.1f}" y2="{line:.1f}" stroke="#000" stroke-dasharray="4 3"/>'
            f'</svg>')
