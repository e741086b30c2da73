"""How soon a process tries the broker again after losing it: within a second, over and over.

Celery's workers reconnect through kombu's `Connection.ensure_connection`, whose waits between
rounds over the failover list grow by 2 s a round up to 30 s (2, 4, 6 …). After a 30 s
outage a worker was still asleep in such a wait when the broker returned, and the first file
reached a client 4.3-5.3 s after the return. The waits here are 0, 0.5, then 1 s: a round
costs the broker three refused connections a second per process while it is down, nothing
once it is up. The connection class is Celery's documented place for this (`AMQP.Connection`,
given to the app as its `amqp` class).
"""

from celery.app.amqp import AMQP
from kombu import Connection

FIRST_WAIT_S = 0.0
WAIT_STEP_S = 0.5
LONGEST_WAIT_S = 1.0


class PromptConnection(Connection):
    """A kombu Connection whose reconnection waits at most a second between rounds."""

    def ensure_connection(self, *args, **kwargs):
        kwargs.setdefault("interval_start", FIRST_WAIT_S)
        kwargs.setdefault("interval_step", WAIT_STEP_S)
        kwargs.setdefault("interval_max", LONGEST_WAIT_S)
        return super().ensure_connection(*args, **kwargs)


class PromptAMQP(AMQP):
    Connection = PromptConnection
    BrokerConnection = PromptConnection
