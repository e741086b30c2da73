"""The pull API. A request's path:

1. `views` → `keys` (the key, checked against the in-memory `catalogue`) and `throttles`;
2. `file_requests` → an address (`addresses`): entitled? which shape? which Redis key?
3. `read_path` → the memory copy (`file_memory`) while no invalidation (`invalidations`) named
   it since Redis (`pull_redis`) confirmed it, else the new body from Redis, else one
   PostgreSQL read per file (`database_reads`);
4. `responses` → ETag/304, gzip as stored; errors as RFC 9457 problems (`problems`).

Around it: `change_notices` (catalogue reloads), `pull_cache_destinations` (the Redis
destinations that fill the cache), `schema` (OpenAPI), `serving` (the production server).
"""
