"""XML for clients that cannot read JSON: objects become elements, lists repeat <item>.

Whatever the JSON holds, the XML is well-formed: a key that is not a plain ASCII name becomes
<field name="…">, and a character XML 1.0 cannot carry (a NUL, a form feed) becomes U+FFFD
(the workflow commands refuse them, but data may arrive by other ways).
"""

from xml.sax.saxutils import escape, quoteattr

from omnium.clients.transforms.base import Marks, Rendered, Transform, apply_marks, load
from omnium.encoding.xml_chars import xml_safe


def _tag(name: str) -> str:
    """`name` if it is a safe element name (ASCII letters, digits, '_', not first a digit)."""
    plain = name.isascii() and name.replace("_", "a").isalnum() and not name[0].isdigit()
    return name if plain and not name.lower().startswith("xml") else "field"


def _element(name: str, value, out: list) -> None:
    tag = _tag(name)
    attr = "" if tag == name else f" name={quoteattr(xml_safe(name))}"
    if isinstance(value, dict):
        out.append(f"<{tag}{attr}>")
        for key in sorted(value):
            _element(key, value[key], out)
        out.append(f"</{tag}>")
    elif isinstance(value, list):
        out.append(f"<{tag}{attr}>")
        for item in value:
            _element("item", item, out)
        out.append(f"</{tag}>")
    elif value is None:
        out.append(f"<{tag}{attr}/>")
    else:
        text = str(value).lower() if isinstance(value, bool) else str(value)
        out.append(f"<{tag}{attr}>{escape(xml_safe(text))}</{tag}>")


class XmlTransform(Transform):
    name = "xml"
    label = "XML"

    def render(self, body: bytes, marks: Marks) -> Rendered:
        out = ['<?xml version="1.0" encoding="UTF-8"?>']
        _element("feed", apply_marks(load(body), marks), out)
        return Rendered("".join(out).encode(), "application/xml", "xml")
