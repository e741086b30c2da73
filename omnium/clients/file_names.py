"""File name templates: where a subscription puts a file at its destination.

Placeholders: {games} {feed_type} {filter} {name} ({feed_type} or {feed_type}-{filter}),
{doc_key} ({games}/{feed_type}[/{filter}], the pull cache's layout) and {ext} (from the
transform), each written bare: no format spec (`{filter:.>2}`), no conversion (`{games!r}`),
no attribute or index access (`{games.__class__}`), which str.format would otherwise run.
The result must be a plain relative path (omnium.transports.paths), checked here when a
template is saved and again by the transport at every send.
"""

import string

from omnium.transports.paths import unsafe_path_reason

PLACEHOLDERS = {"games", "feed_type", "filter", "name", "doc_key", "ext"}
DEFAULT_TEMPLATE = "{games}/{name}.{ext}"


class FileNameError(ValueError):
    pass


def check_template(template: str) -> None:
    """Raise FileNameError saying what is wrong with `template`."""
    _placeholders(template)
    check_path(render(template, "ag1", "country", "IND", "json"))


def render(template: str, games: str, feed_type: str, filter: str, ext: str) -> str:
    """The path of one file: the template's text with its placeholders filled in (never
    str.format, which would follow `{games.__class__}`; a stored template that bypassed
    validation fails here with FileNameError)."""
    values = {
        "games": games, "feed_type": feed_type, "filter": filter, "ext": ext,
        "name": f"{feed_type}-{filter}" if filter else feed_type,
        "doc_key": f"{games}/{feed_type}/{filter}" if filter else f"{games}/{feed_type}",
    }
    return "".join(literal + (values[field] if field is not None else "") for literal, field in _placeholders(template))


def _placeholders(template: str) -> list[tuple[str, str | None]]:
    """(literal text, placeholder name or None) pairs; FileNameError for anything but a bare
    known placeholder."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise FileNameError(f"file name template is malformed: {exc}") from None
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if spec or conversion:
            raise FileNameError(f"placeholder {{{field}}} takes no format spec or conversion (':' or '!')")
        if field not in PLACEHOLDERS:
            raise FileNameError(f"unknown placeholder {{{field}}}; use {sorted(PLACEHOLDERS)} "
                                "(no attribute or index access)")
    return [(literal, field) for literal, field, _, _ in parsed]


def check_path(path: str) -> str:
    unsafe = unsafe_path_reason(path)
    if unsafe is not None:
        raise FileNameError(unsafe)
    return path
