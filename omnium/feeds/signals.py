"""Signals of the feed builder. Delivery subscribes; the builder never imports delivery."""

from django.dispatch import Signal

# Sent after the transaction that committed a new version of a file.
# kwargs: doc_key (str), seq (int)
file_version_committed = Signal()
