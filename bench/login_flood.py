"""A flood of admin sign-ins, as an attacker spread over many addresses would send it: each POST
names a random user and comes "from" a random address (X-Forwarded-For, believed because the
admin server trusts the bench's loopback as its proxy), so no lockout ever applies and every
attempt costs the server a password hash. Used by bench/pull.py beside a wrk run of the API."""

import random
import re
import threading
import time
from collections import Counter

import requests

CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class LoginFlood:
    def __init__(self, admin_url: str, threads: int = 8):
        self.admin_url, self.threads = admin_url.rstrip("/"), threads
        self.answers, self.lock, self.stopping = Counter(), threading.Lock(), threading.Event()
        self.workers: list[threading.Thread] = []
        self.started_at = self.stopped_at = 0.0

    def start(self) -> "LoginFlood":
        self.started_at = time.monotonic()
        for n in range(self.threads):
            worker = threading.Thread(target=self._flood, args=(random.Random(n),), daemon=True)
            worker.start()
            self.workers.append(worker)
        return self

    def stop(self) -> dict:
        self.stopping.set()
        for worker in self.workers:
            worker.join(30)
        self.stopped_at = time.monotonic()
        attempts = sum(self.answers.values())
        return {"attempts": attempts, "attempts_per_s": round(attempts / (self.stopped_at - self.started_at), 1),
                "answers": dict(self.answers)}

    def _flood(self, rng: random.Random) -> None:
        session = requests.Session()
        login = f"{self.admin_url}/admin/login/"
        page = session.get(login)
        # The CSRF cookie is Secure in production settings, which requests will not send over
        # plain HTTP on loopback: sent by hand, with the form's token.
        cookie, token = page.cookies.get("csrftoken"), CSRF_FIELD.search(page.text).group(1)
        while not self.stopping.is_set():
            address = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
            answer = session.post(login, data={"csrfmiddlewaretoken": token, "username": f"guess{rng.randrange(10**9)}",
                                               "password": "not the password", "next": "/admin/"},
                                  headers={"Cookie": f"csrftoken={cookie}", "X-Forwarded-For": address},
                                  allow_redirects=False, timeout=30)
            with self.lock:
                self.answers[answer.status_code] += 1
