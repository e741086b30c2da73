"""The legacy shape of the old /getfeeds clients: {"FeedType", "LastUpdated", "Version", "Data"}."""

import orjson

from omnium.clients.transforms.base import Marks, Rendered, Transform, apply_marks, load


class LegacyTransform(Transform):
    name = "legacy"
    label = "Legacy getfeeds shape"

    def render(self, body: bytes, marks: Marks) -> Rendered:
        document = apply_marks(load(body), marks)
        feed = document["feed"]
        legacy = {
            "FeedType": feed["type"] if not feed["filter"] else f"{feed['type']}_{feed['filter']}",
            "SeriesId": feed["games"],
            "LastUpdated": document["changed_at"],
            "Data": document["data"],
        }
        if marks.version is not None:
            legacy["Version"] = marks.version
        return Rendered(orjson.dumps(legacy), "application/json", "json")
