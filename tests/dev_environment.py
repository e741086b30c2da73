"""A pytest plugin loaded with `-p` (pytest.ini) so that it runs before pytest-django imports
the settings, which happens before any conftest.py is read.

Tests run with the development keys, which the settings refuse unless DEBUG is on (production
is the default). pytest-django still runs every test with settings.DEBUG = False; child
processes (tests/child_processes.py) inherit this environment.
"""

import os

os.environ.setdefault("DJANGO_DEBUG", "true")

# The pull cache destinations follow every Games and entitlement by themselves in production;
# in tests they would appear in every test that loads a Games (and send tasks that a later
# test's worker would run). Tests of that upkeep turn it on (tests/pullapi/test_pull_cache_upkeep.py).
os.environ.setdefault("OMNIUM_PULL_CACHE_AUTOMATIC", "false")

# The tests' servers are on loopback, which production refuses as a destination; the tests of
# the address policy set their own networks (tests/transports/test_address_policy.py).
os.environ.setdefault("OMNIUM_DESTINATION_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
