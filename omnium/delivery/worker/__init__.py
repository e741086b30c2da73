"""The delivery worker process: a Celery worker (threads pool) that consumes every
destination's queue.

- `kick_consumer`: the consumer bootstep that takes kicks (kombu Consumer over every
  `deliver.<id>` queue) and hands each destination id to a pool thread (engine.sender).
- `queues`: which destination queues exist, and the control command that makes every
  delivery worker consume a new one.
- `worker_threads`: the worker's start: its heartbeat thread, the control listener (a pause
  cuts a send in progress), and the destinations loaded ahead of their first drains.
- `warm_shutdown`: SIGTERM starts engine.stopping (hand over after the send in flight, cut
  what outlasts OMNIUM_DELIVERY_STOP_DEADLINE_S).
"""
