"""File name templates: any text is a refusal (FileNameError) or a template whose paths stay
inside the destination."""

import re

from hypothesis import given
from hypothesis import strategies as st

from omnium.clients import file_names
from omnium.transports.paths import unsafe_path_reason
from tests.fuzzing import FUZZ

PIECES = st.sampled_from([
    "{games}", "{feed_type}", "{filter}", "{name}", "{doc_key}", "{ext}", "/", ".", "..", "-", "{", "}",
    "{{", "}}", "{games!r}", "{filter:.>2}", "{games.__class__}", "{name[0]}", "{}", "{0}", "\\", "\u202e", "\x85",
])
TEMPLATES = st.one_of(st.text(max_size=40), st.lists(st.one_of(PIECES, st.text(max_size=4)), max_size=8).map("".join))
# Text of the kind a path is made of, so that many generated paths are accepted and the
# property's checks of an accepted path run, not only its refusals.
PATH_TEXT = st.text(alphabet="abcXYZ019-_.", min_size=1, max_size=6)
ACCEPTED_LOOKING = st.lists(st.one_of(st.sampled_from(["{games}", "{feed_type}", "{filter}", "{name}", "{doc_key}",
                                                       "{ext}", "/", "."]), PATH_TEXT),
                            min_size=1, max_size=8).map("".join)
VALUES = st.one_of(PATH_TEXT, st.text(max_size=12))
SAMPLE = {"games": "ag1", "feed_type": "country", "filter": "IND", "name": "country-IND", "doc_key": "ag1/country/IND",
          "ext": "json"}


def substituted(template: str) -> str:
    """What an accepted template must render to: its text, each {placeholder} replaced by its
    value, doubled braces halved; nothing formatted, converted or looked up."""
    return re.sub(r"\{\{|\}\}|\{(\w+)\}", lambda m: SAMPLE[m[1]] if m[1] else m[0][0], template)


@FUZZ
@given(template=TEMPLATES)
def test_any_template_is_refused_clearly_or_renders_a_safe_relative_path(template):
    try:
        file_names.check_template(template)
    except file_names.FileNameError as refusal:
        assert str(refusal)
        return
    path = file_names.render(template, "ag1", "country", "IND", "json")
    assert path == substituted(template)
    assert unsafe_path_reason(path) is None
    assert not path.startswith("/") and ".." not in path.split("/")


@FUZZ
@given(template=st.one_of(ACCEPTED_LOOKING, TEMPLATES), games=VALUES, feed_type=VALUES, filter=VALUES)
def test_rendering_with_any_data_is_a_path_or_a_file_name_error_and_the_send_check_catches_the_rest(
        template, games, feed_type, filter):
    try:
        path = file_names.render(template, games, feed_type, filter, "json")
    except file_names.FileNameError as refusal:
        assert str(refusal)
        return
    reason = unsafe_path_reason(path)  # what every send checks before it writes (Transport.send)
    if reason is not None:
        assert repr(path) in reason or "file name" in reason, reason  # names the path, or what is wrong with its length
        return
    segments = path.split("/")
    assert not path.startswith("/") and "\\" not in path
    assert all(segment and not segment.startswith(".") for segment in segments)
