"""The Celery application. Routing and the beat schedule live in omnium.routing."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnium.settings")

app = Celery("omnium")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _apply_routing(sender, **kwargs):
    from omnium import routing

    sender.conf.task_routes = routing.task_routes()
    sender.conf.beat_schedule = routing.beat_schedule()
