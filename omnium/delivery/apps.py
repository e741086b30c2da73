from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "omnium.delivery"
    verbose_name = "Delivery"

    def ready(self):
        # Signal receivers, the control command, the worker's start-up hook, beat's watchdog.
        from omnium.delivery import fanout, settings_changes  # noqa: F401
        from omnium.delivery.engine import deletion  # noqa: F401
        from omnium.delivery.operations import dead_mans_switch, key_cleanup  # noqa: F401
        from omnium.delivery.worker import queues, warm_shutdown, worker_threads  # noqa: F401
