"""A served file as an HTTP answer: ETag and 304, gzip as stored, Cache-Control for private data."""

from django.http import HttpResponse, HttpResponseNotModified

# Clients may keep a copy but must ask again each time (files change live), and no shared
# cache may keep it: the data is licensed per client.
CACHE_CONTROL = "private, no-cache"
VARY = "Accept-Encoding"  # and the key, but answers are private: no shared cache keeps them


def etag_matches(if_none_match: str, file) -> bool:
    """Weak comparison (RFC 9110 §13.1.2): W/"x" and "x" both match our file's "x"."""
    if if_none_match == file.http_etag:
        return True
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*":
            return True
        if candidate.startswith("W/"):
            candidate = candidate[2:]
        if candidate.strip('"') == file.etag:
            return True
    return False


def accepts_gzip(accept_encoding: str | None) -> bool:
    if not accept_encoding or "gzip" not in accept_encoding:
        return False
    for coding in accept_encoding.split(","):
        name, _, params = coding.partition(";")
        if name.strip().lower() in ("gzip", "x-gzip"):
            return params.replace(" ", "").lower() not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


def file_response(meta, served, content_type: str, keep_plain=None) -> HttpResponse:
    """The answer for `served`; `keep_plain(file)` is told when a plain body was made."""
    file = served.file
    if_none_match = meta.get("HTTP_IF_NONE_MATCH")
    if if_none_match is not None and etag_matches(if_none_match, file):
        response = HttpResponseNotModified()
    elif accepts_gzip(meta.get("HTTP_ACCEPT_ENCODING")):
        response = HttpResponse(file.gz, content_type=content_type)
        response["Content-Encoding"] = "gzip"
    else:
        had_plain = file.has_plain
        response = HttpResponse(file.plain, content_type=content_type)
        if not had_plain and keep_plain is not None:
            keep_plain(file)
    response["ETag"] = file.http_etag
    response["Cache-Control"] = CACHE_CONTROL
    response["Vary"] = VARY
    if served.stale_age_s is not None:
        # Redis could not confirm this copy is current: say how long ago it last did.
        response["Age"] = str(int(served.stale_age_s))
        response["X-Omnium-Stale"] = "pull cache unavailable"
    return response
