"""How a Celery worker process is tuned as it starts and between tasks (wired in `omnium.celery`).

- `database_connections`: PostgreSQL connections kept from task to task while they are sound.
- `cpu_priority`: a worker consuming only bulk queues lowers its CPU priority, so live builds
  and sends get the cores first.
- `warm_stop`: work in flight when a worker is asked to stop, a flag its pool's children see,
  and a deadline after which the work still running is handed to the caller (sends, builds).
"""
