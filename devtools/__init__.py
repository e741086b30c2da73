"""Tooling for the demo, the benchmarks and the tests. The product (`omnium`) never imports it.

- `processes`: one runner for every local process (Celery workers, beat, API servers, loopback
  servers): own process group, output in a log file, stopped or killed whole; free ports.
- `waiting`: one wait-until helper that fails with a message saying what did not happen.
- `loopback/`: real servers and misbehaving hosts on 127.0.0.1 (S3, SFTP, FTP, webhook, Redis).
- `broker`, `broker_cluster`: a RabbitMQ vhost per run; a three-node RabbitMQ cluster on
  loopback whose nodes can be killed, cut off and started again.
- `generator`, `replay`: a deterministic Games, and a day of its changes played through the
  workflow commands; `load_games` and `replay_day` run them (`python -m devtools …`).
- `provisioning`: clients, destinations and subscriptions for the demo and benchmarks.
- `latency`: change-to-built and change-to-delivered measurements.
"""
