"""In-process caches shared by the pull API and the delivery workers.

- `memory_lru`: caches bounded in bytes, least recently used dropped first, misses filled once.
- `single_flight`: many threads asking for the same thing share one call.
"""
