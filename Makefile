# `make demo` runs the whole pipeline live on this machine; `make test` runs the tests.
# Both set everything up themselves (virtualenv, packages, database, migrations) and leave
# nothing running when they end.

VENV := .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/omnium

.PHONY: demo test install services test-servers database bench

$(VENV)/installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

install: $(VENV)/installed

services:
	scripts/ensure-services.sh

# Real loopback servers (OpenSSH sshd for SFTP; the rest come with requirements.txt).
test-servers: install
	scripts/test-servers/install.sh

database: install services
	$(PY) scripts/ensure_database.py
	$(PY) manage.py migrate --noinput

demo: database test-servers
	$(PY) scripts/demo.py

# Tests use their own Redis database and PostgreSQL database (test_omnium).
test: install services test-servers
	REDIS_URL=redis://127.0.0.1:6379/15 $(PY) -m pytest

bench: database test-servers
	$(PY) bench/build.py
	$(PY) bench/deliver.py
	$(PY) bench/pull.py
