"""A pytest plugin loaded with `-p` (pytest.ini) so that it runs before pytest-django imports
the settings, which happens before any conftest.py is read.

Tests run with the development keys, which the settings refuse unless DEBUG is on (production
is the default). pytest-django still runs every test with settings.DEBUG = False; child
processes (tests/processes.py) inherit this environment.
"""

import os

os.environ.setdefault("DJANGO_DEBUG", "true")
