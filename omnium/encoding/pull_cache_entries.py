"""One entry of the Redis pull cache, as its writers and its readers both know it.

A hash per file: ``v`` (the version), ``etag`` and ``gz`` (the gzipped body). Written by the
Redis destinations (omnium.transports.redis) and by the pull API when it fills a gap from
PostgreSQL (omnium.pullapi.read_path); read by the pull API. Django-free.
"""

# Write-if-newer in one step: a zombie sender or a late retry holding an older version
# can never replace a newer one (ARCHITECTURE rule 4). Returns {1, v} when stored and
# {0, current} when a version at least as new is already there.
#
# ARGV[4], a lifetime in seconds, is given by the read path only: its copy from PostgreSQL
# expires unless a destination, which keeps the key current, writes the key too (without
# ARGV[4]: the key is then kept for good, even when its version was already there). So no
# copy stays in Redis that nothing will update.
WRITE_IF_NEWER = """
local current = tonumber(redis.call('HGET', KEYS[1], 'v'))
local offered = tonumber(ARGV[1])
local ttl = tonumber(ARGV[4])
if current and current >= offered then
  if not ttl then redis.call('PERSIST', KEYS[1]) end
  return {0, current}
end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'etag', ARGV[2], 'gz', ARGV[3])
if ttl then redis.call('EXPIRE', KEYS[1], ttl) else redis.call('PERSIST', KEYS[1]) end
return {1, offered}
"""
