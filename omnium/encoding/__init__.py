"""How bytes leave Omnium: shared by the transports (which know no Django) and the pull API.

- `compression`: the gzip form of a feed file body (ISA-L).
- `pull_cache_entries`: one entry of the Redis pull cache, as its writers and readers know it.
- `xml_chars`: the characters an XML 1.0 document can carry.
"""
