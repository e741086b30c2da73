"""JSON as we build it. With no marks to change, the stored bytes go out untouched."""

import orjson

from omnium.clients.transforms.base import Marks, Rendered, Transform, apply_marks, load


class JsonTransform(Transform):
    name = "json"
    label = "JSON (as built)"

    def render(self, body: bytes, marks: Marks) -> Rendered:
        if marks == Marks():
            return Rendered(bytes(body), "application/json", "json")
        document = apply_marks(load(body), marks)
        return Rendered(orjson.dumps(document, option=orjson.OPT_SORT_KEYS), "application/json", "json")
