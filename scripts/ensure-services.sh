#!/usr/bin/env bash
# Start PostgreSQL and Redis on this machine if they are not answering (CI and fresh machines
# normally have both running; this makes `make demo` / `make test` work when one stopped).
set -euo pipefail

if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  echo "starting PostgreSQL" >&2
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 && break; sleep 0.5; done
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "starting Redis" >&2
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 30); do redis-cli ping >/dev/null 2>&1 && break; sleep 0.2; done
fi
