"""Signals of the feed builder. Delivery subscribes; the builder never imports delivery."""

from django.dispatch import Signal

# Sent after the transaction that committed a new version of a file.
# kwargs: doc_key (str), seq (int)
file_version_committed = Signal()

# Sent INSIDE the transaction that saves a new version, so that a subscriber's writes (the
# owed rows of every destination) commit or roll back with the version itself.
# kwargs: doc_key (str), seq (int), definition_id (int), filter (str)
file_version_saved = Signal()
