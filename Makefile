# `make demo` runs the whole pipeline live on this machine; `make test` runs the tests
# (`make test-fast`: only those that start no process, in under a minute).
# Both set everything up themselves (virtualenv, packages, database, migrations) and leave
# nothing running when they end.

VENV := .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/omnium
# Every target here runs on a developer machine with the development keys, which the
# settings refuse unless DEBUG is on (production is the default: omnium/settings.py).
export DJANGO_DEBUG ?= true

.PHONY: demo test test-fast lint audit docs install lock services test-servers database bench gameday

# A developer machine gets the product's locked packages and the tools' (requirements-dev.txt);
# a production host installs requirements.lock alone, with --require-hashes.
$(VENV)/installed: requirements.lock requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --require-hashes -r requirements.lock
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

# requirements.lock: every package the product runs on (requirements.txt and what those need),
# pinned with the hashes of their files, which pip checks at install (--require-hashes). Run
# after changing requirements.txt; tests/structure/test_requirements.py fails until you do.
lock:
	$(VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
	    --no-emit-find-links --output-file=requirements.lock requirements.txt

install: $(VENV)/installed

services:
	scripts/ensure-services.sh

# Real loopback servers (OpenSSH sshd for SFTP; the rest come with requirements-dev.txt).
test-servers: install
	scripts/test-servers/install.sh

database: install services
	$(PY) scripts/ensure_database.py
	$(PY) manage.py migrate --noinput

demo: database test-servers
	$(PY) scripts/demo.py

# Tests use their own Redis database and PostgreSQL database (test_omnium).
TEST_ENV := REDIS_URL=redis://127.0.0.1:6379/15

lint: install
	$(VENV)/bin/ruff check .

# The vulnerability audit of requirements.lock: pip-audit, strict, against the Python Packaging
# Advisory Database (read through PyPI's JSON API). `make audit` fails where that cannot be read;
# `make test` says so aloud and goes on (scripts/audit_packages.py).
audit: install
	$(PY) scripts/audit_packages.py

# Tests run in TEST_PROCESSES pytest processes side by side (pytest-xdist), each with its own
# test database, broker vhost and redis-server (tests/dev_environment.py): most of a test's time
# is spent waiting on servers, workers and deadlines, so four keep this machine's 2 cores busy
# (measured: 491 s in one process, 209 s in three, 153 s in four). `worksteal`: an idle process
# takes tests queued for a busy one, so the half-minute tests do not all end up at the tail.
# Tests marked `alone` stop a service every process shares, or hold a latency bound (100 ms)
# that the other processes would decide: they run afterwards, by themselves.
TEST_PROCESSES ?= 4
PARALLEL := -n $(TEST_PROCESSES) --dist worksteal

# The docs are built last: their admin screenshots are the ones the browser test just took.
test: lint services test-servers
	$(PY) scripts/audit_packages.py --unless-unreachable
	$(TEST_ENV) $(PY) -m pytest $(PARALLEL) -m "not alone"
	$(TEST_ENV) $(PY) -m pytest -m alone
	$(SPHINX)

# The docs site (docs/: Sphinx with MyST pages) into var/docs/, warnings as errors: a broken
# link, a page in no table of contents or a missing screenshot fails it. The admin guide's
# screenshots are those the browser test took last (var/screenshots/); with none yet, it runs
# that test first.
SPHINX := $(PY) -m sphinx -W --keep-going -q -b html docs var/docs
docs: install services test-servers
	test -f var/screenshots/admin-connection-test.png -a -f var/screenshots/portal-deliveries.png \
	    || $(TEST_ENV) $(PY) -m pytest -q tests/browser
	$(SPHINX)

# Pure and single-process database tests: no Celery process, no server process.
# No broker: the fast tier's Celery is pointed at a port that refuses (tests/conftest.py), so
# it passes with RabbitMQ stopped, and a test that needs RabbitMQ must be marked `broker`.
test-fast: lint
	scripts/ensure-services.sh postgresql redis
	$(TEST_ENV) $(PY) -m pytest $(PARALLEL) -m "not worker and not servers and not broker"

bench: database test-servers
	$(PY) bench/build.py
	$(PY) bench/deliver.py
	$(PY) bench/pull.py

# A replayed Games day with faults (kills, Redis and PostgreSQL restarts, a refusing webhook,
# a frozen SFTP server, a credential rotation). Not part of `make bench`: it restarts the
# machine's PostgreSQL (GAMEDAY_OPTIONS=--skip-postgres-restart leaves that out).
gameday: database test-servers
	$(PY) bench/gameday.py $(GAMEDAY_OPTIONS)
