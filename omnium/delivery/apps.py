from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "omnium.delivery"
    verbose_name = "Delivery"

    def ready(self):
        # Signal receivers, the control command, the worker's start-up hook, beat's watchdog.
        from omnium.delivery import (  # noqa: F401
            dead_mans_switch,
            deletion,
            fanout,
            key_cleanup,
            queues,
            settings_changes,
            worker_threads,
        )
