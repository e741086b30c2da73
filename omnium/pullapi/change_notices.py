"""Change notices: every API process reloads its catalogue within a second of a change.

A save or delete of a client, key, entitlement, feed definition or Games publishes a notice
on a Redis channel after its transaction commits. Each API process listens in one daemon
thread and reloads on a notice. Notices are hints (Redis may lose them): the thread also
reloads whenever it reconnects and at least every PULL_CATALOGUE_MAX_AGE_S, so a missed
notice costs at most that long.
"""

import logging
import threading
import time

import redis
from django.db import close_old_connections, connections, transaction
from django.db.models.signals import post_delete, post_save

from omnium import redis_keys
from omnium.conf import omnium_setting
from omnium.pullapi import key_use
from omnium.pullapi.catalogue import holder
from omnium.pullapi.pull_redis import pull_redis

# Every API process listens for changes: catalogue notices here, file invalidations in read_path.
# Tests that drive reloads by hand in one process turn it off (tests/pullapi/conftest.py).
LISTEN_FOR_CHANGES = True

log = logging.getLogger(__name__)



def publish() -> None:
    try:
        pull_redis().publish(redis_keys.CATALOGUE_CHANNEL, "changed")
    except redis.RedisError:
        log.warning("could not publish a catalogue change notice; API processes reload within %s s",
                    omnium_setting("PULL_CATALOGUE_MAX_AGE_S"))


def _changed(sender, **kwargs) -> None:
    transaction.on_commit(publish)


def connect() -> None:
    from omnium.clients.models import ApiKey, Client, Entitlement
    from omnium.feeds.models import FeedDefinition
    from omnium.games.models import Games

    for model in (Client, ApiKey, Entitlement, FeedDefinition, Games):
        for signal in (post_save, post_delete):
            signal.connect(_changed, sender=model, dispatch_uid=f"pull-catalogue-{model.__name__}-{signal}")


class Listener(threading.Thread):
    def __init__(self):
        super().__init__(name="pull-catalogue-listener", daemon=True)

    def run(self) -> None:
        while True:
            try:
                self._listen()
            except Exception:
                log.warning("catalogue listener lost Redis; retrying every second", exc_info=True)
                time.sleep(1.0)
                # Without notices the catalogue still refreshes at its maximum age.
                if holder.age_s() >= omnium_setting("PULL_CATALOGUE_MAX_AGE_S"):
                    self._reload()

    def _listen(self) -> None:
        pubsub = pull_redis().pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(redis_keys.CATALOGUE_CHANNEL)
        try:
            self._reload()  # anything missed while not subscribed
            while True:
                message = pubsub.get_message(timeout=1.0)
                if message is not None or holder.age_s() >= omnium_setting("PULL_CATALOGUE_MAX_AGE_S"):
                    self._reload()
                key_use.write_if_due()
        finally:
            pubsub.close()

    def _reload(self) -> None:
        try:
            close_old_connections()
            holder.reload()
        except Exception:
            log.exception("catalogue reload failed; keeping the previous one")
        finally:
            connections.close_all()  # this thread's own connection only


_started = threading.Lock()
_listener: Listener | None = None


def ensure_current() -> None:
    """Called on each request: load the catalogue once, and keep it current.

    With notices on, the first request in a process loads synchronously and starts the
    listener; without them (tests driving reloads themselves), nothing happens here.
    """
    global _listener
    if _listener is not None or not LISTEN_FOR_CHANGES:
        return
    with _started:
        if _listener is None:
            holder.reload()
            _listener = Listener()
            _listener.start()
