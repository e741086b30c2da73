"""Error answers as RFC 9457 problem details: {"type", "title", "status", "detail", "instance"}.

Every refusal of the pull API goes through DRF's exception handling and leaves here as
`application/problem+json`. The codes a client sees: 400 malformed parameters, 401 missing
or bad key, 403 not entitled, 404 unknown file, 429 too many requests.
"""

from http import HTTPStatus

import orjson
from django.http import HttpResponse
from rest_framework import exceptions
from rest_framework.views import exception_handler

PROBLEM_TYPE = "urn:omnium:problem:{code}"
CONTENT_TYPE = "application/problem+json"


class Malformed(exceptions.ParseError):
    default_code = "malformed"


class NotEntitled(exceptions.PermissionDenied):
    default_detail = "Your key does not entitle you to this file."
    default_code = "not_entitled"


class UnknownFile(exceptions.NotFound):
    default_detail = "There is no such file."
    default_code = "unknown_file"


def problem_response(exc, context):
    """DRF's EXCEPTION_HANDLER: DRF's own answer (status, headers), with a problem body."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    request = context.get("request")
    problem = {
        "type": PROBLEM_TYPE.format(code=_code(exc)),
        "title": _title(response.status_code),
        "status": response.status_code,
        "detail": _detail(exc),
        "instance": request.path if request is not None else None,
    }
    answer = HttpResponse(orjson.dumps(problem), status=response.status_code, content_type=CONTENT_TYPE)
    for name, value in response.items():
        if name.lower() in ("www-authenticate", "retry-after"):
            answer[name] = value
    answer["Cache-Control"] = "no-store"
    return answer


def _code(exc) -> str:
    codes = exc.get_codes() if isinstance(exc, exceptions.APIException) else "error"
    return (codes if isinstance(codes, str) else "invalid").replace("_", "-")


def _detail(exc) -> str:
    detail = getattr(exc, "detail", str(exc))
    if isinstance(detail, dict):
        return "; ".join(f"{k}: {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in detail.items())
    if isinstance(detail, list):
        return " ".join(map(str, detail))
    return str(detail)


def _title(status_code: int) -> str:
    try:
        return HTTPStatus(status_code).phrase
    except ValueError:
        return "Error"

