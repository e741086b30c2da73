import os

import django

from omnium.metrics.process_files import use_group_directory
from omnium.pullapi.serving import prepare_api_process

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnium.settings")
prepare_api_process()
# Before the application (and prometheus_client) loads: each API worker process counts into
# files that /metrics on any of them reads (omnium/metrics/process_files.py).
use_group_directory("api")
django.setup(set_prefix=False)

from omnium.pullapi.keyed_requests import api_application  # noqa: E402 (its views need the apps loaded)

application = api_application()
