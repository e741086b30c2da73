import pytest
from django.db import IntegrityError, connection, transaction

from omnium.database.server_binding import server_binding_cursor


@pytest.fixture
def scratch(db):
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE scratch (id int PRIMARY KEY, body bytea)")
    yield
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE scratch")


def test_bytes_go_in_and_come_out_exactly(scratch):
    body = bytes(range(256)) * 4096 + b"\x00"
    with server_binding_cursor() as cursor:
        cursor.execute("INSERT INTO scratch VALUES (1, %s)", [body])
    with server_binding_cursor(binary_results=True) as cursor:
        cursor.execute("SELECT body FROM scratch WHERE id = %s", [1])
        assert cursor.fetchone()[0] == body
    with connection.cursor() as cursor:  # and Django's own cursor reads the same bytes
        cursor.execute("SELECT body FROM scratch WHERE id = 1")
        assert bytes(cursor.fetchone()[0]) == body


def test_it_works_in_django_s_transaction(scratch):
    with pytest.raises(RuntimeError), transaction.atomic():
        with server_binding_cursor() as cursor:
            cursor.execute("INSERT INTO scratch VALUES (2, %s)", [b"rolled back"])
        raise RuntimeError("stop")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM scratch")
        assert cursor.fetchone()[0] == 0


def test_its_errors_are_django_s(scratch):
    with server_binding_cursor() as cursor:
        cursor.execute("INSERT INTO scratch VALUES (3, %s)", [b"first"])
    with pytest.raises(IntegrityError), transaction.atomic(), server_binding_cursor() as cursor:
        cursor.execute("INSERT INTO scratch VALUES (3, %s)", [b"second"])
    with server_binding_cursor(binary_results=True) as cursor:
        cursor.execute("SELECT body FROM scratch WHERE id = 3")
        assert cursor.fetchone()[0] == b"first"
