#!/usr/bin/env python
"""The ceiling of a webhook receiver on this machine: a minimal HTTP client (http.client, one
thread per connection, no database, no Celery) posting signed feed-sized bodies to it.

bench/scale.py runs it as a process of its own, as the delivery workers are, and compares
their sends a second with its posts a second. Prints posts a second.
Usage: .venv/bin/python bench/raw_post.py URL SECRET [--seconds 5] [--connections 32] [--bytes 2000]
"""

import argparse
import http.client
import threading
import time
import uuid
from urllib.parse import urlsplit

from omnium.transports.webhook import sign


def post_until(url: str, secret: str, body: bytes, stop_at: float, counts: list) -> None:
    """Post `body` until `stop_at`, each on a new connection (the loopback receiver speaks
    HTTP/1.0, as it does to the delivery workers); counts the 2xx answers."""
    parts = urlsplit(url)
    posted = 0
    while time.monotonic() < stop_at:
        message_id, timestamp = f"msg_{uuid.uuid4().hex}", int(time.time())
        headers = {"content-type": "application/json", "webhook-id": message_id,
                   "webhook-timestamp": str(timestamp), "webhook-signature": sign(secret, message_id, timestamp, body),
                   "omnium-path": "raw/medals.json"}
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.request("POST", parts.path, body=body, headers=headers)
        reply = connection.getresponse()
        reply.read()
        connection.close()
        posted += 200 <= reply.status < 300
    counts.append(posted)


def posts_per_second(url: str, secret: str, seconds: float, connections: int, size: int) -> float:
    body = b"x" * size
    counts: list[int] = []
    started = time.monotonic()
    threads = [threading.Thread(target=post_until, args=(url, secret, body, started + seconds, counts))
               for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("secret")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--bytes", type=int, default=2000)
    args = parser.parse_args()
    print(round(posts_per_second(args.url, args.secret, args.seconds, args.connections, args.bytes), 1))


if __name__ == "__main__":
    main()
