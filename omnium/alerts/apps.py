from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "omnium.alerts"

    def ready(self):
        from omnium.alerts import worker_heartbeats  # noqa: F401  (starts with every worker)
