"""The characters an XML 1.0 document can carry (https://www.w3.org/TR/xml/#charsets).

Tab, newline, carriage return, and U+0020 to U+10FFFF without the surrogates, U+FFFE and
U+FFFF. Anything else (a NUL or a form feed pasted into a venue, say) makes the whole XML
file unreadable for every client that parses it, however it is escaped.
"""

import re

REPLACEMENT = "\ufffd"
_NOT_IN_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def first_not_in_xml(text: str) -> tuple[int, str] | None:
    """(position, character) of the first character XML 1.0 cannot carry, or None."""
    found = _NOT_IN_XML.search(text)
    return None if found is None else (found.start(), found.group())


def xml_safe(text: str) -> str:
    """`text` with every character XML 1.0 cannot carry replaced by U+FFFD."""
    return _NOT_IN_XML.sub(REPLACEMENT, text)
