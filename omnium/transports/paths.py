"""What a file's path at a destination may be: a plain relative path, checked when a
template is saved (omnium.clients.file_names) and again by every send (Transport.send), since
a path is only final once a filter from the data has been filled in.

No "..", no leading "/", no backslashes, no empty or hidden segments, and no control or
format characters: C0 and C1 controls end lines and confuse servers' logs, and bidi
overrides (U+202E…) make `feed\u202ejson.exe` read as something else in a listing.
"""

import unicodedata

MAX_LENGTH = 1024
_REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}  # controls, format (bidi), unassigned


def unsafe_path_reason(path: str) -> str | None:
    """Why `path` cannot be a file's path at a destination, or None when it can."""
    if not path:
        return "the file name is empty"
    if len(path) > MAX_LENGTH:
        return f"the file name is longer than {MAX_LENGTH} characters"
    if path.startswith("/"):
        return f"{path!r} is an absolute path; file names must be relative"
    if "\\" in path:
        return f"{path!r} contains a backslash"
    refused = next((c for c in path if unicodedata.category(c) in _REFUSED_CATEGORIES), None)
    if refused is not None:
        return f"{path!r} contains a control, format or bidi character (U+{ord(refused):04X})"
    for segment in path.split("/"):
        if segment in ("", ".", ".."):
            return f"{path!r} contains an empty, '.' or '..' segment (path traversal)"
        if segment.startswith("."):
            return f"{path!r} has a hidden segment; those names are kept for uploads in progress"
    return None
