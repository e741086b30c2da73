"""Fan-out: a new file version becomes owed work for every subscription that takes it.

The owed rows are written inside the transaction that saves the version (the builder's
`file_version_saved` signal), so a version can never commit without its owed rows; the kick
to each destination's queue follows after commit and is only a hint.
"""

from django.db import connection, transaction
from django.dispatch import receiver

from omnium.delivery.kicks import kick_soon
from omnium.feeds.signals import file_version_saved

OWE = """
INSERT INTO delivery_state AS ds
    (subscription_id, destination_id, doc_key, wanted_seq, wanted_at, force_resend, sent_seq,
     receipt, sent_path, last_error)"""

# Owed work coalesces: one row per (subscription, file); wanted_seq only rises. wanted_at is
# when the destination fell behind on this file: a newer version replacing one still unsent
# keeps it (otherwise a stuck destination fed a new version every few seconds would never
# look behind), and only a file that had caught up starts a new wait.
COALESCE_OWED = """
ON CONFLICT (subscription_id, doc_key) DO UPDATE SET
    wanted_at = CASE WHEN EXCLUDED.wanted_seq <= ds.wanted_seq OR ds.wanted_seq > ds.sent_seq
                     THEN ds.wanted_at ELSE EXCLUDED.wanted_at END,
    wanted_seq = GREATEST(ds.wanted_seq, EXCLUDED.wanted_seq)
RETURNING destination_id
"""

# Subscriptions of this definition (so of this Games only: the event filter), for this
# file's filter or for every filter. Disabled or fenced destinations still owe: they catch up
# when switched back on.
OWE_NEW_VERSION = OWE + """
SELECT s.id, s.destination_id, %(doc_key)s, %(seq)s, clock_timestamp(), false, 0, '', '', ''
FROM clients_subscription s
WHERE s.definition_id = %(definition_id)s AND s.active AND (s.filter = '' OR s.filter = %(filter)s)
""" + COALESCE_OWED

OWE_CURRENT_FILES = OWE + """
SELECT s.id, s.destination_id, d.doc_key, d.seq, clock_timestamp(), false, 0, '', '', ''
FROM clients_subscription s
JOIN feeds_feeddocument d ON d.definition_id = s.definition_id AND (s.filter = '' OR d.filter = s.filter)
WHERE s.id = ANY(%(subscription_ids)s) AND s.active
""" + COALESCE_OWED


@receiver(file_version_saved)
def owe_new_version(sender, doc_key, seq, definition_id, filter, **kwargs):
    with connection.cursor() as cursor:
        cursor.execute(OWE_NEW_VERSION, {"doc_key": doc_key, "seq": seq, "definition_id": definition_id,
                                         "filter": filter})
        destinations = {row[0] for row in cursor.fetchall()}
    _kick_after_commit(destinations)


def owe_current_files(subscription_id: int) -> int:
    """A new (or re-activated) subscription owes the current version of each of its files."""
    return owe_current_files_of([subscription_id])


def owe_current_files_of(subscription_ids: list[int]) -> int:
    """Many new subscriptions owe their current files in one statement, and their destinations
    get one batch of kicks (see devtools.provisioning.provision_destinations)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(OWE_CURRENT_FILES, {"subscription_ids": list(subscription_ids)})
        rows = cursor.fetchall()
        _kick_after_commit({row[0] for row in rows})
    return len(rows)


def _kick_after_commit(destination_ids) -> None:
    if destination_ids:
        ids = sorted(destination_ids)
        transaction.on_commit(lambda: kick_soon(ids))


def _owe_when_subscribed(sender, instance, created, **kwargs):
    if instance.active:
        transaction.on_commit(lambda: owe_current_files(instance.pk))


def _connect_model_signals():
    from django.db.models.signals import post_save

    from omnium.clients.models import Subscription

    post_save.connect(_owe_when_subscribed, sender=Subscription, dispatch_uid="delivery-owe-when-subscribed")


_connect_model_signals()
