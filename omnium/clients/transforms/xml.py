"""XML for clients that cannot read JSON: objects become elements, lists repeat <item>."""

from xml.sax.saxutils import escape, quoteattr

from omnium.clients.transforms.base import Marks, Rendered, Transform, apply_marks, load


def _element(name: str, value, out: list) -> None:
    tag = name if name.replace("_", "a").isalnum() and not name[0].isdigit() else "field"
    attr = "" if tag == name else f" name={quoteattr(name)}"
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
        out.append(f"<{tag}{attr}>{escape(text)}</{tag}>")


class XmlTransform(Transform):
    name = "xml"
    label = "XML"

    def render(self, body: bytes, marks: Marks) -> Rendered:
        out = ['<?xml version="1.0" encoding="UTF-8"?>']
        _element("feed", apply_marks(load(body), marks), out)
        return Rendered("".join(out).encode(), "application/xml", "xml")
