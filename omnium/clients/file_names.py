"""File name templates: where a subscription puts a file at its destination.

Placeholders: {games} {feed_type} {filter} {name} ({feed_type} or {feed_type}-{filter}),
{doc_key} ({games}/{feed_type}[/{filter}], the pull cache's layout) and {ext} (from the
transform). The result must be a plain relative path: no "..", no leading
"/", no backslashes, no empty or hidden segments, no control characters.
"""

import string

PLACEHOLDERS = {"games", "feed_type", "filter", "name", "doc_key", "ext"}
DEFAULT_TEMPLATE = "{games}/{name}.{ext}"


class FileNameError(ValueError):
    pass


def check_template(template: str) -> None:
    """Raise FileNameError saying what is wrong with `template`."""
    try:
        fields = {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    except ValueError as exc:
        raise FileNameError(f"file name template is malformed: {exc}") from None
    unknown = fields - PLACEHOLDERS
    if unknown:
        raise FileNameError(f"unknown placeholder {{{sorted(unknown)[0]}}}; use {sorted(PLACEHOLDERS)}")
    check_path(render(template, "ag1", "country", "IND", "json"))


def render(template: str, games: str, feed_type: str, filter: str, ext: str) -> str:
    name = f"{feed_type}-{filter}" if filter else feed_type
    doc_key = f"{games}/{feed_type}/{filter}" if filter else f"{games}/{feed_type}"
    return template.format(games=games, feed_type=feed_type, filter=filter, name=name, doc_key=doc_key, ext=ext)


def check_path(path: str) -> str:
    if not path:
        raise FileNameError("the file name is empty")
    if path.startswith("/"):
        raise FileNameError(f"{path!r} is an absolute path; file names must be relative")
    if "\\" in path or any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise FileNameError(f"{path!r} contains a backslash or a control character")
    for segment in path.split("/"):
        if segment in ("", ".", ".."):
            raise FileNameError(f"{path!r} contains an empty, '.' or '..' segment (path traversal)")
        if segment.startswith("."):
            raise FileNameError(f"{path!r} has a hidden segment; those names are kept for uploads in progress")
    return path
