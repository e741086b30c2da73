"""What may be stored and shown of an error raised by a transport or an alert channel.

Errors quote what the library or the far side saw: requests and urllib3 put the whole URL in
every connection error (a webhook's or Slack's token sits in its path or query), a URL may
carry `user:password@`, and a server chooses its own reason phrase and body. So attempts,
`last_error`, logs, the health event log and alert texts keep only this: the exception's
class, the host, the HTTP status and a short reason with every URL path, query string and
user part removed.

A transport error that knows what kind of failure it was (``TransportError.reason``) is stored
as its plain sentence on the first line and the technical text on the second, so that every
screen and alert that shows a stored error can say it the way a person understands it
(``plain_and_technical`` splits them again).
"""

import re
from urllib.parse import urlsplit

REASON_LENGTH = 160

# scheme://[user[:password]@]host[:port][/path][?query][#fragment]
_URL = re.compile(r"\b([a-z][a-z0-9+.-]*://)(?:[^\s/@'\"<>]*@)?([^\s/?#'\"<>]*)[^\s'\"<>]*", re.IGNORECASE)
# A bare path or query: "with url: /hooks/T0/B1/secret?token=…" (not the "/1.1" of "HTTP/1.1").
_PATH_OR_QUERY = re.compile(r"(?<![\w.])/[^\s'\"<>]*|\?[^\s'\"<>]*")
_SPACES = re.compile(r"\s+")
_NAMED_HOST = re.compile(r"\bhost='([^'\s/]+)'")  # urllib3: HTTPConnectionPool(host='…', port=443)


def safe_error_text(exc: BaseException) -> str:
    """`TransportError host=hooks.example.com status=503: webhook answered 503 Service Unavailable`,
    after the plain sentence and a line break when the error has one."""
    host, status = _host(exc), _status(exc)
    facts = "".join(f" {name}={value}" for name, value in (("host", host), ("status", status)) if value)
    technical = f"{type(exc).__name__}{facts}: {safe_reason(str(exc))}"
    if getattr(exc, "reason", "other") == "other":
        return technical  # "The send failed." would add nothing
    return f"{safe_reason(exc.plain_sentence)}\n{technical}"


def plain_and_technical(text: str) -> tuple[str, str]:
    """A stored error as (plain sentence, technical detail); the sentence is empty for errors
    stored without one."""
    plain, separator, technical = text.partition("\n")
    return (plain, technical) if separator else ("", text)


def safe_reason(text: str) -> str:
    """`text` on one line, without URL paths, query strings or credentials, cut short."""
    text = _URL.sub(lambda url: url[1] + url[2], text)
    text = _PATH_OR_QUERY.sub("", text)
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= REASON_LENGTH else text[: REASON_LENGTH - 1] + "…"


def _causes(exc: BaseException):
    """The error and what it was raised from, outermost first (cycles cannot loop forever)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _host(exc: BaseException) -> str | None:
    for error in _causes(exc):
        host = getattr(error, "host", None)  # a TransportError's own
        if isinstance(host, str) and host:
            return host
        url = getattr(getattr(error, "request", None), "url", None)  # requests
        if isinstance(url, str) and urlsplit(url).hostname:
            return urlsplit(url).hostname
    text = str(exc)
    named, found = _NAMED_HOST.search(text), _URL.search(text)
    if named:
        return named[1]
    return urlsplit(found[0]).hostname if found else None


def _status(exc: BaseException) -> int | None:
    for error in _causes(exc):
        status = getattr(error, "status", None)
        if isinstance(status, int):
            return status
        status = getattr(getattr(error, "response", None), "status_code", None)  # requests
        if isinstance(status, int):
            return status
    return None
