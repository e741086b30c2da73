"""Fast database set-up for tests that commit (transactional_db): emptying and snapshots.

Measured on this machine: Django empties the database after every committing test with one
TRUNCATE of all 40 tables (0.26-0.31 s: a new file per table) and then recreates every
content type and permission (another 0.1-0.2 s); a small Games takes 0.2-0.3 s to generate
and build. With some 150 committing tests that was over two minutes of a six-minute suite.
Here, DELETE empties the tables (milliseconds: they hold a few thousand rows), content types
and permissions stay as migrations made them, and a Games generated once is copied back with
COPY. Sequences are never reset, so rows copied back never collide with ids handed out later.
"""

from django.db import connection, transaction

# Written once, by migrations; every test may rely on them.
KEPT_TABLES = ("django_migrations", "django_content_type", "auth_permission")

EMPTY_EVERY_TABLE = """
DO $$
DECLARE t text;
BEGIN
  -- Foreign keys are not checked while every table is emptied anyway.
  SET LOCAL session_replication_role = replica;
  FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public'
           AND tablename NOT IN ('django_migrations', 'django_content_type', 'auth_permission') LOOP
    EXECUTE format('DELETE FROM %I', t);
  END LOOP;
END $$;
"""


def empty_every_table() -> None:
    # A test that cut this process's connection (a PostgreSQL restart) must not leave it dead
    # for every test after it: Django connects afresh on the next query.
    if connection.connection is not None and not connection.is_usable():
        connection.close()
    with connection.cursor() as cursor:
        cursor.execute(EMPTY_EVERY_TABLE)


def _filled_tables(prefixes: tuple[str, ...]) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
        names = [row[0] for row in cursor.fetchall() if row[0].startswith(prefixes)]
        filled = []
        for name in names:
            cursor.execute(f'SELECT EXISTS (SELECT 1 FROM "{name}")')
            if cursor.fetchone()[0]:
                filled.append(name)
    return filled


class Snapshot:
    """The rows of the tables named by prefix, copied out once and copied back on demand."""

    def __init__(self, rows_by_table: dict[str, bytes]):
        self.rows_by_table = rows_by_table

    @classmethod
    def take(cls, prefixes: tuple[str, ...]) -> "Snapshot":
        rows = {}
        with connection.cursor() as cursor:
            for table in _filled_tables(prefixes):
                with cursor.cursor.copy(f'COPY "{table}" TO STDOUT (FORMAT binary)') as copy:
                    rows[table] = b"".join(bytes(block) for block in copy)
        return cls(rows)

    def restore(self) -> None:
        """Copy the rows back into tables that do not hold them (the test starts empty)."""
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL session_replication_role = replica")
            for table, rows in self.rows_by_table.items():
                with cursor.cursor.copy(f'COPY "{table}" FROM STDIN (FORMAT binary)') as copy:
                    copy.write(rows)


_taken: dict[str, Snapshot] = {}


def made_once(name: str, make, prefixes: tuple[str, ...]) -> bool:
    """Run `make()` the first time `name` is asked for in this session and snapshot the tables
    it wrote (named by prefix); later, copy those rows back instead. The database must be
    empty of them (as every committing test starts). True when `make()` ran."""
    if name in _taken:
        _taken[name].restore()
        return False
    make()
    _taken[name] = Snapshot.take(prefixes)
    return True
