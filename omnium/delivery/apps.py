from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "omnium.delivery"
    verbose_name = "Delivery"

    def ready(self):
        # Signal receivers, the control command and the worker's start-up hook.
        from omnium.delivery import deletion, fanout, key_cleanup, queues, settings_changes, worker_threads  # noqa: F401
