"""A client's shape: how its files are rendered (transform and marks), pulled and pushed alike.

The shape is the client's (`Client.transform`, `include_version`, `include_result_marks`); a
subscription may override it field by field. A file in a shape other than as built carries the
shape's tag, a short hash of the shape, in its pull cache key and in its ETag. Without it, a
shape change was never served to a pull client: the new shape of the same version was refused
by write-if-newer under the old key, and the client's old ETag was still answered 304.
"""

import hashlib
from dataclasses import dataclass
from functools import cache

from omnium.clients.transforms import TRANSFORMS
from omnium.clients.transforms.base import Marks


@cache
def content_type_of(transform: str) -> str:
    """The media type a transform produces (found by rendering a minimal file once)."""
    sample = (b'{"built_at":null,"changed_at":null,"data":{},'
              b'"feed":{"filter":null,"games":"x","name":"x","type":"x"}}')
    return TRANSFORMS[transform].render(sample, Marks()).content_type


@dataclass(frozen=True)
class Shape:
    transform: str = "json"
    include_version: bool = False
    include_result_marks: bool = True

    @property
    def own(self) -> bool:
        """Rendered for its client alone, rather than the file as built that everyone shares."""
        return self != AS_BUILT

    @property
    def tag(self) -> str:
        """Eight hex digits naming this shape (in own-shape keys and ETags)."""
        spelled = f"{self.transform}|{int(self.include_version)}|{int(self.include_result_marks)}"
        return hashlib.blake2b(spelled.encode(), digest_size=4).hexdigest()

    @property
    def content_type(self) -> str:
        return content_type_of(self.transform)

    def marks(self, version: int) -> Marks:
        return Marks(version=version if self.include_version else None, result_status=self.include_result_marks)

    def etag(self, content_hash_hex: str) -> str:
        """The ETag of a file version in this shape: the content hash, plus the tag if own."""
        return f"{content_hash_hex}-{self.tag}" if self.own else content_hash_hex


AS_BUILT = Shape()
