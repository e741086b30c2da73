"""Pull keys rotate without a gap (issue 33): issuing a new key gives the client's older keys
an expiry (7 days unless chosen), an expired key is refused from that moment on every process
without waiting for a reload, and each key's last use is known within a minute without a write
per request."""

import threading
import time
from datetime import timedelta

from django.contrib.auth.models import User
from django.test import Client as Browser
from django.utils import timezone

from omnium.clients.models import ApiKey
from omnium.pullapi import key_use
from omnium.pullapi.catalogue import holder
from tests.pullapi.conftest import bearer


def _admin() -> Browser:
    browser = Browser()
    browser.force_login(User.objects.create_superuser("ops", "ops@example.org", "a long enough password"))
    return browser


def test_issuing_a_new_key_gives_the_older_working_keys_the_chosen_expiry(games, entitle):
    client, _ = entitle("acme", games, "medals")
    old = ApiKey.objects.get(client=client)
    ending_sooner, _ = ApiKey.issue(client, "ends tomorrow", expires_at=timezone.now() + timedelta(days=1))
    revoked, _ = ApiKey.issue(client, "revoked")
    revoked.revoke()

    admin = _admin()
    answer = admin.post("/admin/clients/apikey/add/", {"client": client.pk, "name": "production 2027",
                                                          "old_keys_expire_in_days": "7"})

    assert answer.status_code == 200 and "omk_" in answer.content.decode()  # the new key, shown once
    new = ApiKey.objects.get(name="production 2027")
    assert new.expires_at is None
    old.refresh_from_db(), ending_sooner.refresh_from_db(), revoked.refresh_from_db()
    assert timedelta(days=6, hours=23) < old.expires_at - timezone.now() <= timedelta(days=7)
    assert ending_sooner.expires_at - timezone.now() <= timedelta(days=1), "an earlier end is kept"
    assert revoked.expires_at is None
    page = admin.get(f"/admin/clients/client/{client.pk}/change/").content.decode()
    assert old.lookup_id in page and new.lookup_id in page  # the client's page lists its keys


def test_an_expired_key_is_refused_from_its_expiry_without_a_reload(games, entitle, http):
    _, key = entitle("acme", games, "medals", key_fields={"expires_at": timezone.now() + timedelta(seconds=1)})
    path = f"/v1/feeds/{games.code}/medals"
    assert http.get(path, **bearer(key)).status_code == 200
    loaded_at = holder.snapshot.loaded_at

    time.sleep(1.1)
    refused = http.get(path, **bearer(key))

    assert refused.status_code == 401
    assert "expired" in refused.json()["detail"]
    assert holder.snapshot.loaded_at == loaded_at, "no reload was needed"


def _listener_step() -> int:
    """key_use's write, in a thread of its own as the listener runs it (it closes its thread's
    connection after writing)."""
    written = []
    step = threading.Thread(target=lambda: written.append(key_use.write_if_due()))
    step.start(), step.join()
    return written[0]


def test_a_keys_last_use_is_written_once_per_interval_by_the_listeners_thread(games, entitle, http, settings):
    client, key = entitle("acme", games, "medals")
    path = f"/v1/feeds/{games.code}/medals"
    settings.OMNIUM = {**settings.OMNIUM, "PULL_KEY_USE_WRITE_S": 0.01}
    _listener_step()  # whatever earlier tests noted, out of the way
    time.sleep(0.02)
    for _ in range(5):
        assert http.get(path, **bearer(key)).status_code == 200

    assert _listener_step() == 1, "five uses, one key written in one UPDATE"
    used_at = ApiKey.objects.get(client=client).last_used_at
    assert used_at is not None

    settings.OMNIUM = {**settings.OMNIUM, "PULL_KEY_USE_WRITE_S": 3600}
    assert http.get(path, **bearer(key)).status_code == 200
    assert _listener_step() == 0, "not again within the interval"
    settings.OMNIUM = {**settings.OMNIUM, "PULL_KEY_USE_WRITE_S": 0.01}
    time.sleep(0.02)  # the (short) interval since the last write passes
    assert _listener_step() == 1
    assert ApiKey.objects.get(client=client).last_used_at > used_at
