"""The OpenAPI schema (/v1/schema) is a contract a generated client can trust: every parameter
has its pattern or format, every answer the API gives is documented with its body and headers,
and a request the schema calls valid is never refused as malformed (400)."""

import re

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

from omnium.games.models import Fixture
from tests.fuzzing import FUZZ
from tests.pullapi.conftest import bearer

ERRORS = ("400", "401", "403", "404", "429")


@pytest.fixture
def schema(admin_client):
    reply = admin_client.get("/v1/schema", {"format": "json"})
    assert reply.status_code == 200
    return orjson.loads(reply.content)


@pytest.fixture
def key(games, entitle):
    return entitle("contract", games, "medals", "calendar", "country", "standings", "results")[1]


def _operations(schema):
    for path, item in schema["paths"].items():
        if "get" in item:
            yield path, item["get"]


def _json_schema(fragment, schema):
    """An OpenAPI 3.0 schema object as JSON Schema: $refs inlined, `nullable` as a null type."""
    if isinstance(fragment, list):
        return [_json_schema(item, schema) for item in fragment]
    if not isinstance(fragment, dict):
        return fragment
    if "$ref" in fragment:
        name = fragment["$ref"].rsplit("/", 1)[1]
        return _json_schema(schema["components"]["schemas"][name], schema)
    converted = {name: _json_schema(value, schema) for name, value in fragment.items() if name != "nullable"}
    if fragment.get("nullable"):
        converted["type"] = [fragment["type"], "null"]
    return converted


def _is_valid(value, fragment, schema) -> bool:
    return Draft202012Validator(_json_schema(fragment, schema), format_checker=FormatChecker()).is_valid(value)


def _operation_for(schema, path: str):
    for template, operation in _operations(schema):
        pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)
        found = re.fullmatch(pattern, path)
        if found:
            return operation, found.groupdict()
    raise AssertionError(f"{path} is not in the schema")


def _request_is_valid(schema, path: str, query: dict) -> bool:
    operation, values = _operation_for(schema, path)
    for parameter in operation.get("parameters", []):
        value = values.get(parameter["name"]) if parameter["in"] == "path" else query.get(parameter["name"])
        if parameter["in"] not in ("path", "query"):
            continue
        if value is None:
            if parameter.get("required"):
                return False
            continue
        if not _is_valid(value, parameter["schema"], schema):
            return False
    return True


def test_every_parameter_has_its_pattern_or_format(schema):
    for path, operation in _operations(schema):
        for parameter in operation["parameters"]:
            if parameter["in"] == "path" or parameter["name"] in ("seriesid", "feedtype"):
                shape = parameter["schema"]
                assert "pattern" in shape or shape.get("format") in ("date", "uuid"), (path, parameter)


def test_every_file_endpoint_documents_its_refusals_and_the_304(schema):
    for path, operation in _operations(schema):
        responses = operation["responses"]
        for status in ERRORS:
            problem = responses[status]["content"]["application/problem+json"]["schema"]
            assert problem == {"$ref": "#/components/schemas/Problem"}, (path, status)
        assert "ETag" in responses["304"]["headers"] and "ETag" in responses["200"]["headers"], path
        assert {"pullKey", "pullKeyHeader"} <= {name for option in operation["security"] for name in option}


def test_both_ways_to_send_a_key_are_security_schemes(schema):
    schemes = schema["components"]["securitySchemes"]
    assert schemes["pullKey"] == {**schemes["pullKey"], "type": "http", "scheme": "bearer"}
    assert (schemes["pullKeyHeader"]["type"], schemes["pullKeyHeader"]["in"], schemes["pullKeyHeader"]["name"]) == (
        "apiKey", "header", "X-Api-Key")


def _check_answer(schema, path: str, reply) -> None:
    operation, _ = _operation_for(schema, path)
    documented = operation["responses"].get(str(reply.status_code))
    assert documented is not None, f"{path} answered {reply.status_code}, which the schema does not list"
    for header in documented.get("headers", {}):
        if header != "Retry-After":
            assert header in reply, (path, reply.status_code, header)
    if reply.status_code == 304:
        return
    media_type = reply["Content-Type"].split(";")[0]
    assert media_type in documented["content"], (path, reply.status_code, media_type)
    body = orjson.loads(reply.content) if media_type.endswith("json") else reply.content.decode()
    assert _is_valid(body, documented["content"][media_type]["schema"], schema), (path, body)


def test_real_answers_match_the_schema(games, key, entitle, http, schema):
    _, other_key = entitle("other", games, "entries")
    fixture = Fixture.objects.filter(games=games).order_by("starts_at").first()
    medals = f"/v1/feeds/{games.code}/medals"
    etag = http.get(medals, **bearer(key))["ETag"]
    asked = [
        (medals, {}, bearer(key), 200),
        (medals, {}, {"HTTP_X_API_KEY": key, "HTTP_IF_NONE_MATCH": etag}, 304),
        (medals, {}, {}, 401),
        (medals, {}, bearer(other_key), 403),
        (f"/v1/feeds/{games.code}/country/ZZZ", {}, bearer(key), 404),
        (f"/v1/feeds/{games.code}/country/I$D", {}, bearer(key), 400),
        (f"/v1/feeds/{games.code}/calendar/days/{fixture.starts_at.date()}", {}, bearer(key), 200),
        (f"/v1/feeds/{games.code}/calendar/fixtures/{fixture.pk}", {}, bearer(key), 200),
        (f"/v1/fixtures/{fixture.pk}", {}, bearer(key), 200),
        (f"/v1/medals/{games.code}", {}, bearer(key), 200),
        ("/getfeeds", {"seriesid": games.code, "feedtype": "country_IND"}, bearer(key), 200),
        ("/getfeeds", {"seriesid": games.code}, bearer(key), 400),
    ]
    for path, query, headers, status in asked:
        reply = http.get(path, query, **headers)
        assert reply.status_code == status, (path, query, reply.content[:200])
        _check_answer(schema, path, reply)
        assert _request_is_valid(schema, path, query) == (status != 400), (path, query)


@pytest.mark.parametrize("path, query", [
    ("/v1/feeds/{games}/country", {}),  # a per-country feed named without its country
    ("/v1/feeds/{games}/medals/IND", {}),  # a feed of one file named with a filter
    ("/v1/feeds/{games}/calendar_day/IND", {}),  # a day's file named by a country
    ("/v1/feeds/{games}/fixture/IND", {}),
    ("/getfeeds", {"seriesid": "{games}", "feedtype": "country_"}),
])
def test_well_formed_addresses_of_no_file_are_404_not_400(games, key, http, schema, path, query):
    path = path.format(games=games.code)
    query = {name: value.format(games=games.code) for name, value in query.items()}
    assert _request_is_valid(schema, path, query)

    reply = http.get(path, query, **bearer(key))

    assert reply.status_code == 404, reply.content
    _check_answer(schema, path, reply)


ROUTES = ["/v1/feeds/{games}/{feed_type}", "/v1/feeds/{games}/{feed_type}/{filter}",
          "/v1/feeds/{games}/calendar/days/{day}", "/v1/feeds/{games}/calendar/fixtures/{fixture_id}",
          "/v1/standings/{games}/{unit}", "/v1/medals/{games}", "/v1/fixtures/{fixture_id}",
          "/v1/athletes/{athlete_id}/career"]


def _values_of(parameter) -> st.SearchStrategy:
    shape = parameter["schema"]
    if shape.get("format") == "uuid":
        return st.uuids().map(str)
    if shape.get("format") == "date":
        return st.dates().map(lambda day: day.isoformat())
    return st.from_regex(shape["pattern"].strip("^$"), fullmatch=True)


@FUZZ
@given(data=st.data(), route=st.sampled_from(ROUTES), real_games=st.booleans())
def test_a_request_the_schema_calls_valid_is_never_answered_400(games, key, http, schema, data, route,
                                                                real_games):
    operation = schema["paths"][route]["get"]
    values = {p["name"]: data.draw(_values_of(p), label=p["name"]) for p in operation["parameters"]
              if p["in"] == "path"}
    if real_games and "games" in values:
        values["games"] = games.code  # reach past the Games into feed types and filters
    path = route.format(**values)

    reply = http.get(path, **bearer(key))

    assert reply.status_code != 400, (path, reply.content)
    _check_answer(schema, path, reply)


@FUZZ
@given(data=st.data(), real_games=st.booleans())
def test_a_getfeeds_query_the_schema_calls_valid_is_never_answered_400(games, key, http, schema, data, real_games):
    parameters = {p["name"]: p for p in schema["paths"]["/getfeeds"]["get"]["parameters"]}
    query = {name: data.draw(_values_of(parameters[name]), label=name) for name in ("seriesid", "feedtype")}
    if real_games:
        query["seriesid"] = games.code

    reply = http.get("/getfeeds", query, **bearer(key))

    assert reply.status_code != 400, (query, reply.content)
    _check_answer(schema, "/getfeeds", reply)
