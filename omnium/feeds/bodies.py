"""File bodies (up to megabytes) to and from PostgreSQL as bytes rather than as text.

Django binds parameters into the query text on the client (psycopg's ClientCursor) and
reads results as text, so a 3 MB body travels as 6 MB of hex that one side writes and the
other parses. A psycopg cursor of our own on Django's connection, so in its transaction,
sends parameters apart from the query and can read results in binary. Measured on the
3 MB calendar: saving it took 0.081 s through Django's cursor and 0.042 s this way; reading
it 0.018 s and 0.006 s.
"""

from contextlib import contextmanager

import psycopg
from django.db import connection


@contextmanager
def binary_cursor():
    """A cursor on Django's default connection (in its transaction, its errors translated
    to Django's as any query's are) that binds parameters on the server. Pass
    `binary=True` to `execute` to read the results in binary."""
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        yield cursor
