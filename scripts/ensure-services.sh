#!/usr/bin/env bash
# Start PostgreSQL, Redis and RabbitMQ on this machine if they are not answering (CI and fresh
# machines normally have all three running; this makes `make demo` / `make test` work when one
# stopped), installing RabbitMQ from Debian if it is missing, with its management plugin
# (queue depths for Flower, and the vhosts the tests and benchmarks make for themselves).
# Arguments name the services wanted (postgresql redis rabbitmq); none means all three:
# `make test-fast` asks for PostgreSQL and Redis only, and runs with no broker.
set -euo pipefail

wanted=" ${*:-postgresql redis rabbitmq} "
wants() {  # service
  [[ "$wanted" == *" $1 "* ]]
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

answers() {  # host port
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

if wants postgresql && ! pg_isready -q -h 127.0.0.1 -p 5432; then
  echo "starting PostgreSQL" >&2
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 && break; sleep 0.5; done
fi
if wants redis && ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "starting Redis" >&2
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 30); do redis-cli ping >/dev/null 2>&1 && break; sleep 0.2; done
fi

if ! wants rabbitmq; then
  exit 0
fi
if ! command -v rabbitmq-server >/dev/null; then
  echo "installing RabbitMQ (Debian rabbitmq-server)" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends rabbitmq-server
fi
if ! answers 127.0.0.1 5672; then
  echo "starting RabbitMQ" >&2
  as_root rabbitmq-server -detached
  for _ in $(seq 120); do answers 127.0.0.1 5672 && break; sleep 0.5; done
fi
if ! answers 127.0.0.1 15672; then
  echo "enabling RabbitMQ's management plugin" >&2
  as_root rabbitmq-plugins enable --quiet rabbitmq_management >/dev/null
  for _ in $(seq 120); do answers 127.0.0.1 15672 && break; sleep 0.5; done
fi
