from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "omnium.delivery"
    verbose_name = "Delivery"

    def ready(self):
        from omnium.delivery import deletion, fanout, queues  # noqa: F401  (signal receivers, control commands)
