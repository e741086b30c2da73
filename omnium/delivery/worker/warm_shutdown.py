"""A delivery worker's warm shutdown: on SIGTERM (Celery's ``worker_shutting_down`` signal) its
drains stop after the send in flight and hand their destinations to other workers, and sends
still running after OMNIUM_DELIVERY_STOP_DEADLINE_S are cut (engine.stopping)."""

from celery.signals import worker_shutting_down

from omnium.conf import omnium_setting
from omnium.delivery.engine import stopping


@worker_shutting_down.connect
def _stop_drains(sender=None, sig=None, how=None, exitcode=None, **kwargs) -> None:
    if how == "Warm":  # a cold shutdown (a second signal) ends the process at once anyway
        stopping.begin(omnium_setting("DELIVERY_STOP_DEADLINE_S"))
