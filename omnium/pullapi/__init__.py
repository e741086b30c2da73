"""The pull API: clients fetch feed files with a secret key.

A request's path, from the socket to the answer:

1. `serving` starts granian (WSGI, one blocking thread per worker); `omnium/wsgi.py` loads
   `keyed_requests.ApiApplication`, the WSGI application.
2. `keyed_requests`: a GET of a feed file with a key in a header is first offered to
   `memory_hits`, which answers it before Django when this process holds the file and knows
   it current (a 304 or the stored gzip). Every other request goes to Django: `urls` →
   `views`.
3. `views` → `key_authentication` (the key, checked against the in-memory `catalogue`; `failed_keys` counts
   wrong ones per `client_ip`; `log_scrubbing` keeps keys out of the logs),
   `permissions`, `throttles`, `negotiation`. The failure and rate counts are
   `shared_counts`: per process, shared through Redis in batches.
4. `file_requests` → a location (`file_locations`; `record_games` for documents named by a record
   id alone): entitled? which shape? which Redis key?
5. `read_path` → the memory copy (`file_memory`) while no invalidation (`invalidations`) named
   it since Redis (`pull_redis`) confirmed it, else the new body from Redis, else one
   PostgreSQL read per file (`database_reads`).
6. `responses` → ETag/304, gzip as stored; errors as RFC 9457 problems (`problems`).

Around it: `change_notices` (catalogue reloads within a second of a change; its thread also
writes when keys were last used, noted by `key_use`),
`readiness` (`/healthz`, `/readyz` for load balancers), `pull_cache_destinations` and
`pull_cache_upkeep` (the Redis destinations that fill the
cache, kept by themselves; `tasks` runs their repair, `management/commands/ensure_pull_cache`
now), `schema` (OpenAPI), `apps`.
"""
