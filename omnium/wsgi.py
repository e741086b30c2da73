import os

from django.core.wsgi import get_wsgi_application

from omnium.metrics.process_files import use_group_directory

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnium.settings")
# Before the application (and prometheus_client) loads: each API worker process counts into
# files that /metrics on any of them reads (omnium/metrics/process_files.py).
use_group_directory("api")
application = get_wsgi_application()
