"""Signals the Games data sends; other apps subscribe without the Games app knowing them."""

from django.dispatch import Signal

# Sent after a transaction that wrote outbox rows has committed. A hint only: a lost signal
# is covered by the sweeper, which reads unhandled outbox rows from PostgreSQL.
# kwargs: lane (str)
changes_committed = Signal()
