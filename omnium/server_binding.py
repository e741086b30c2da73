"""A cursor that binds parameters on the server: for file bodies, and for hot statements.

Django binds parameters into the query text on the client (psycopg's ClientCursor) and
reads results as text. A psycopg cursor of our own on Django's connection, so in its
transaction, sends parameters apart from the query, which serves two purposes:

- File bodies (up to megabytes) travel as bytes: through Django's cursor a 3 MB body
  travels as 6 MB of hex that one side writes and the other parses. Measured on the 3 MB
  calendar: saving it took 0.081 s through Django's cursor and 0.042 s this way; reading it
  0.018 s and 0.006 s (with binary results).
- A statement run often is prepared: psycopg prepares a query on its connection once it has
  run it five times (settings: DATABASES' prepare_threshold), and PostgreSQL then stops
  planning it. The sender's pick of the next
  owed file joins seven tables: planning it took 1 ms, running it 0.2 ms, three times a send.
"""

from contextlib import contextmanager

import psycopg
from django.db import connection
from psycopg.pq import Format


@contextmanager
def server_binding_cursor(binary_results: bool = False):
    """A cursor like `connection.cursor()` (Django's connection and transaction, its
    health check, error translation, query logging and execute wrappers) that binds
    parameters on the server and, if asked, reads results in binary."""
    # What BaseDatabaseWrapper._cursor() does, with our cursor in place of create_cursor().
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        own = psycopg.Cursor(connection.connection)
    own.format = Format.BINARY if binary_results else Format.TEXT
    with connection._prepare_cursor(own) as cursor:
        yield cursor
