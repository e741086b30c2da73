"""Messages to the broker that are hints (ARCHITECTURE rule 1): sent without ever failing or
holding up the caller, and a broker outage said once, not once per message.

- `hints`: `send` a hint now, or `send_soon` from this process's hint thread (what a request
  or a save's post-commit hook uses, so that it never waits on the broker).
- `outage`: the broker's reachability as this process saw it last; one log line when an
  outage begins and one when it ends.
- `reconnecting`: the connection class Celery is given, which tries a lost broker again
  within a second (kombu's default waits grow to 30 s).
- `sweep_on_connect`: a worker that (re)connects to the broker asks at once for the sweeps of
  the queues it consumes, so the work of an outage starts as soon as the broker is back.
"""
