"""Transforms: any JSON data in a stored feed file → well-formed XML and valid JSON out."""

from xml.etree import ElementTree

import orjson
from hypothesis import given
from hypothesis import strategies as st

from omnium.clients.transforms import TRANSFORMS
from omnium.clients.transforms.base import Marks
from tests.fuzzing import FUZZ

# What orjson can store: 64-bit integers, finite floats, any Unicode text (surrogates aside).
TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=20)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1),
                    st.floats(allow_nan=False, allow_infinity=False), TEXT)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                    max_leaves=30)
MARKS = st.builds(Marks, version=st.none() | st.integers(1, 2**40), result_status=st.booleans())


def stored_file(data, feed: dict) -> bytes:
    """A stored feed file: our envelope (built by us) around data from anywhere."""
    return orjson.dumps({"built_at": None, "changed_at": "2026-09-23T10:00:00Z", "data": data, "feed": feed},
                        option=orjson.OPT_SORT_KEYS)


FEEDS = st.fixed_dictionaries({"filter": st.none() | TEXT, "games": TEXT, "name": TEXT, "type": TEXT})


@FUZZ
@given(data=JSON, feed=FEEDS, marks=MARKS)
def test_any_json_document_becomes_well_formed_xml(data, feed, marks):
    rendered = TRANSFORMS["xml"].render(stored_file(data, feed), marks)
    root = ElementTree.fromstring(rendered.body)
    assert root.tag == "feed" and rendered.content_type == "application/xml"


@FUZZ
@given(data=JSON, feed=FEEDS, marks=MARKS)
def test_any_json_document_becomes_valid_json_holding_the_same_data(data, feed, marks):
    for name in ("json", "legacy"):
        rendered = TRANSFORMS[name].render(stored_file(data, feed), marks)
        document = orjson.loads(rendered.body)
        if marks.result_status:
            assert document["data" if name == "json" else "Data"] == orjson.loads(orjson.dumps(data))
