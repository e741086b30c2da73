"""Content-Type and Cache-Control per file format, for destinations that store each file as an
object with headers (S3, Azure Blob Storage).

A client's CDN or reader often wants its XML files with another Content-Type than ours, or
its JSON cached for 5 s and its calendars for a minute. A destination says so in a setting
with one rule per line, ``<extension>: <value>``::

    json: max-age=5
    xml: public, max-age=60

A file takes the rule of its name's last extension, and the destination's single value (or
our own Content-Type) when no rule names it.
"""

from __future__ import annotations

import posixpath
import re

from .base import Setting

_EXTENSION = re.compile(r"[a-z0-9]{1,16}")
# A header value: visible ASCII and spaces only, so a rule can never add a header line.
_HEADER_VALUE = re.compile(r"[\x20-\x7e]+")
_MEDIA_TYPE = re.compile(r"[\w.+-]+/[\w.+-]+(\s*;.*)?")


def _rules(text: str | None):
    """(line number, extension, whether it had a colon, value) of each line that is not blank."""
    for number, line in enumerate((text or "").splitlines(), start=1):
        if line.strip():
            extension, colon, value = line.partition(":")
            yield number, extension.strip().lstrip(".").lower(), bool(colon), value.strip()


def parse_rules(text: str | None) -> dict[str, str]:
    """``{extension: value}`` of a valid rules setting (see ``rules_problem``)."""
    return {extension: value for _, extension, _, value in _rules(text)}


def rules_problem(text: str, *, media_types: bool = False) -> str | None:
    """What is wrong with a rules setting, as a message tail, or None."""
    seen = set()
    for number, extension, colon, value in _rules(text):
        if not colon or not _EXTENSION.fullmatch(extension):
            return f"line {number} must read '<extension>: <value>', e.g. 'json: max-age=5'"
        if extension in seen:
            return f"line {number} names .{extension} a second time"
        seen.add(extension)
        if not _HEADER_VALUE.fullmatch(value):
            return f"line {number}: the value must be plain text on one line"
        if media_types and not _MEDIA_TYPE.fullmatch(value):
            return f"line {number}: {value!r} is not a media type such as 'text/xml; charset=utf-8'"
    return None


def media_type_rules_problem(text: str) -> str | None:
    """``rules_problem`` for rules whose values are media types."""
    return rules_problem(text, media_types=True)


def header_value_problem(value: str) -> str | None:
    """A ``check`` for a single header value setting (one line of plain text)."""
    return None if _HEADER_VALUE.fullmatch(value) else "must be plain text on one line"


def value_for(path: str, rules: dict[str, str], default: str | None) -> str | None:
    """The value the rules give the file at ``path``, else ``default``."""
    extension = posixpath.splitext(path)[1].lstrip(".").lower()
    return rules.get(extension, default)


# The settings a storage destination adds to its schema to offer the rules above.
SETTINGS = {
    "cache_control": Setting(str, check=header_value_problem,
                             help="Cache-Control of every file, e.g. 'max-age=5' (empty: none)."),
    "cache_control_by_format": Setting(
        str, multiline=True, check=rules_problem,
        help="Cache-Control per file format, one '<extension>: <value>' per line, e.g. 'xml: max-age=60'; "
             "overrides the one above for those files."),
    "content_type_by_format": Setting(
        str, multiline=True, check=media_type_rules_problem,
        help="Content-Type per file format, one '<extension>: <media type>' per line, e.g. "
             "'xml: text/xml; charset=utf-8' (empty: ours, e.g. application/xml)."),
}


class ObjectHeaders:
    """The Content-Type and Cache-Control a destination's config gives each file."""

    def __init__(self, config: dict):
        self._cache_control = config.get("cache_control") or None
        self._cache_control_rules = parse_rules(config.get("cache_control_by_format"))
        self._content_type_rules = parse_rules(config.get("content_type_by_format"))

    def content_type(self, path: str, ours: str) -> str:
        return value_for(path, self._content_type_rules, ours)

    def cache_control(self, path: str) -> str | None:
        return value_for(path, self._cache_control_rules, self._cache_control)
