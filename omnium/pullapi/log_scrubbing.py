"""Logging filters of the API process: API keys blanked out of every log line, and no line
for a load balancer's probe.

Legacy clients send their key in the address (?key=omk_…); servers and Django log
addresses. The filter rewrites the formatted message, so it works for any logger whose
records pass through the handler it is attached to.
"""

import logging
import re

_KEY = re.compile(r"omk_[A-Za-z0-9]{4,}")
_QUERY_KEY = re.compile(r"((?:^|[?&])(?:key|apikey|api_key)=)[^&\s\"']*", re.IGNORECASE)


def scrub(text: str) -> str:
    return _QUERY_KEY.sub(r"\1[scrubbed]", _KEY.sub("omk_[scrubbed]", text))


class ScrubApiKeys(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "omk_" in message or "key=" in message.lower():
            record.msg, record.args = scrub(message), None
        return True


PROBE_PATHS = ("/healthz", "/readyz")


class QuietProbes(logging.Filter):
    """Drops django.request's line for a probe answered 503 (omnium.pullapi.readiness): a
    balancer asks every second or two, and it, not the log, acts on the answer."""

    def filter(self, record: logging.LogRecord) -> bool:
        return getattr(getattr(record, "request", None), "path", None) not in PROBE_PATHS
