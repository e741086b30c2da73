"""What senders render: one read and one render per version per process, however many ask."""

import re
import threading

import orjson
import pytest
from django.db import connection

from omnium.clients.transforms.base import Marks
from omnium.delivery.engine import rendering
from omnium.feeds.models import FeedDocument

SENDERS = 8


def current_version(doc_key: str) -> rendering.CurrentVersion:
    """The file's version as the sender reads it with its owed files (owed_files.NEXT_OWED)."""
    row = FeedDocument.objects.filter(doc_key=doc_key).values_list(
        "seq", "content_hash", "changed_at", "feed_type", "filter", "built_at").get()
    return rendering.CurrentVersion(doc_key, row[0], bytes(row[1]), *row[2:])


def test_senders_of_a_new_version_share_one_body_read_and_one_render(small_games):
    document = FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar")
    version = current_version(document.doc_key)
    body_reads, results, errors = [], [], []
    all_at_once = threading.Barrier(SENDERS)

    def count_body_reads(execute, sql, params, many, context):
        if re.search(r'\bbody\b', sql):  # the body column, however the query names it
            body_reads.append(sql)
        return execute(sql, params, many, context)

    def sender():
        try:
            with connection.execute_wrapper(count_body_reads):
                all_at_once.wait()
                results.append(rendering.render(version, "xml", Marks()))
        except Exception as exc:  # reported below; a thread's exception would vanish
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=sender) for _ in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert not errors
    assert len(body_reads) == 1, "one read of the body, not one per sender"
    assert len(results) == SENDERS and len({id(result) for result in results}) == 1, "one render, shared"
    assert b"<" in results[0].body


def test_a_version_replaced_before_its_body_is_read_is_not_sent(small_games):
    document = FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar")
    version = current_version(document.doc_key)
    FeedDocument.objects.filter(pk=document.pk).update(seq=document.seq + 1)  # a newer build landed

    with pytest.raises(rendering.VersionMoved):  # never the newer body under the older version
        rendering.render(version, "json", Marks())


def test_xml_is_well_formed_whatever_characters_and_keys_the_json_holds():
    from xml.etree import ElementTree

    from omnium.clients.transforms import TRANSFORMS

    body = orjson.dumps({"feed": {"games": "ag1"}, "data": {
        "venue": "Hall\x00A\x0b\ufffe", "1st": 1, "ª": 2, "xmlns": 3, "a b": "\x1f", "": None,
    }})
    rendered = TRANSFORMS["xml"].render(body, Marks())

    data = ElementTree.fromstring(rendered.body).find("data")
    fields = {field.get("name"): field.text for field in data.iter("field")}
    assert data.find("venue").text == "Hall\ufffdA\ufffd\ufffd"
    assert fields == {"1st": "1", "ª": "2", "xmlns": "3", "a b": "\ufffd", "": None}
