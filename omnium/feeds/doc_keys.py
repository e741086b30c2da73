"""A file's identity: doc_key = "<games code>/<feed type>[/<filter>]"."""

from dataclasses import dataclass


@dataclass(frozen=True)
class FileKey:
    games_code: str
    feed_type: str
    filter: str = ""

    @classmethod
    def parse(cls, doc_key: str) -> "FileKey":
        parts = doc_key.split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise ValueError(f"malformed doc_key {doc_key!r}: expected games/feed_type[/filter]")
        return cls(*parts)

    def __str__(self) -> str:
        base = f"{self.games_code}/{self.feed_type}"
        return f"{base}/{self.filter}" if self.filter else base
