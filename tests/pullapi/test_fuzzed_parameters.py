"""The pull API: any path segment or query parameter is answered, never with a 500.

Runs with a key entitled to the files the endpoints serve, so that requests get past
authentication into the parsing, entitlement and read path code."""

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzzing import FUZZ
from tests.pullapi.conftest import bearer

SEGMENT = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["ag1", "sm7", "medals", "country", "calendar", "IND", "calendar_day", "2026-09-23",
                     "00000000-0000-0000-0000-000000000000", "..", ".", "%00", "a" * 300, "\u202e", "\x00"]),
)
ROUTES = [
    "/v1/feeds/{}/{}", "/v1/feeds/{}/{}/{}", "/v1/feeds/{}/calendar/days/{}", "/v1/feeds/{}/calendar/fixtures/{}",
    "/v1/fixtures/{}", "/v1/standings/{}/{}", "/v1/medals/{}", "/v1/athletes/{}/career",
]
QUERY = st.dictionaries(st.sampled_from(["seriesid", "feedtype", "client", "key"]) | st.text(max_size=8),
                        SEGMENT, max_size=4)


@pytest.fixture
def key(games, entitle):
    return entitle("fuzzer", games, "medals", "standings", "calendar", "results", "country")[1]


def answered_without_a_server_error(http, path, key, query=None):
    response = http.get(path, query, **bearer(key))
    assert response.status_code < 500, (path, query, response.content[:300])
    return response


@FUZZ
@given(route=st.sampled_from(ROUTES), segments=st.lists(SEGMENT, min_size=3, max_size=3), games_code=st.booleans())
def test_any_path_parameters_get_an_answer_never_a_500(games, key, http, route, segments, games_code):
    if games_code:
        segments[0] = games.code  # reach past the Games look-up too
    path = route.format(*(quote(segment, safe="") for segment in segments[: route.count("{}")]))
    answered_without_a_server_error(http, path, key)


@FUZZ
@given(query=QUERY, games_code=st.booleans())
def test_any_getfeeds_query_gets_an_answer_never_a_500(games, key, http, query, games_code):
    if games_code:
        query["seriesid"] = games.code
    answered_without_a_server_error(http, "/getfeeds", key, query)
