"""The transform contract: one client's shape of a feed file, the same for push and pull.

`render(body, marks) -> Rendered`. `body` is the stored file (canonical JSON with its build
time stamp); `marks` says whether the client wants the version number and the provisional /
official mark of each result. A transform is pure and deterministic: the same body and marks
give the same bytes, so a rendered file can be built once at publish time and cached.
"""

from dataclasses import dataclass

import orjson


@dataclass(frozen=True)
class Marks:
    version: int | None = None  # the file's seq, when the client wants it in the file
    result_status: bool = True  # keep "result": provisional / official on each fixture


@dataclass(frozen=True)
class Rendered:
    body: bytes
    content_type: str
    extension: str


class Transform:
    name = ""
    label = ""

    def render(self, body: bytes, marks: Marks) -> Rendered:
        raise NotImplementedError


def apply_marks(document: dict, marks: Marks) -> dict:
    """The document with the client's marks: version added, result marks kept or dropped."""
    if not marks.result_status:
        document = _without_result_marks(document)
    if marks.version is not None:
        document = {**document, "version": marks.version}
    return document


def _without_result_marks(node):
    if isinstance(node, dict):
        return {k: _without_result_marks(v) for k, v in node.items() if k != "result"}
    if isinstance(node, list):
        return [_without_result_marks(item) for item in node]
    return node


def load(body: bytes) -> dict:
    return orjson.loads(body)
