"""The alert rules and the Grafana dashboard under deploy/ (issue 32), checked by Prometheus's
own promtool (Debian's prometheus package, installed by scripts/test-servers/install.sh): the
rules load, their unit tests pass, every dashboard query parses, and every metric they name is
one a real scrape of /metrics serves, which promtool finds well formed."""

import json
import re
import subprocess

import pytest
import yaml
from django.conf import settings
from django.contrib.auth.models import User

from omnium.delivery.engine import sender
from tests.delivery.fixtures import redis_destination_settings, webhook_settings

# promtool is a program installed with the test servers (scripts/test-servers/install.sh).
pytestmark = pytest.mark.servers

DEPLOY = settings.BASE_DIR / "deploy"
RULES = DEPLOY / "prometheus" / "omnium-rules.yml"
DASHBOARD = DEPLOY / "grafana" / "omnium-dashboard.json"
# Series Prometheus makes itself, not /metrics.
PROMETHEUS_OWN = {"up"}


def promtool(*arguments: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", *arguments], input=stdin, capture_output=True, cwd=RULES.parent, timeout=60)


def test_the_alert_rules_load_and_fire_as_their_unit_tests_say():
    checked = promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()

    tested = promtool("test", "rules", "omnium-rules.test.yml")
    assert tested.returncode == 0, tested.stdout.decode() + tested.stderr.decode()


def _dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_every_dashboard_query_parses(tmp_path):
    # promtool parses PromQL when it checks rules: each query becomes a recording rule.
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{n}", "expr": expr} for n, expr in enumerate(_dashboard_queries())]}]}
    (tmp_path / "dashboard-queries.yml").write_text(yaml.safe_dump(rules))

    checked = subprocess.run(["promtool", "check", "rules", str(tmp_path / "dashboard-queries.yml")],
                             capture_output=True, timeout=60)

    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()


@pytest.mark.django_db(transaction=True)
def test_a_real_scrape_is_well_formed_and_serves_every_metric_the_rules_and_dashboard_name(
        small_games, subscribe, client):
    destination = subscribe(small_games, redis_destination_settings())
    sender.drain(destination.pk)  # a confirmed send: the sends counter and the freshness histogram
    refused = subscribe(small_games, webhook_settings("http://127.0.0.1:1/nobody-listens"))
    sender.drain(refused.pk)  # a failed send
    assert client.get(f"/v1/feeds/{small_games.code}/calendar").status_code == 401  # a pull answered
    client.force_login(User.objects.create(username="ops", is_staff=True))

    scrape = client.get("/metrics").content
    checked = promtool("check", "metrics", stdin=scrape)

    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    served = set(re.findall(rb"^# TYPE (\w+) (\w+)", scrape, re.MULTILINE))
    names = {name.decode() for name, _ in served}
    names |= {f"{name.decode()}_{part}" for name, kind in served if kind == b"histogram"
              for part in ("bucket", "count", "sum")}
    queries = _dashboard_queries() + [rule["expr"] for group in yaml.safe_load(RULES.read_text())["groups"]
                                      for rule in group["rules"]]
    named = {name for query in queries for name in re.findall(r"\b(omnium_\w+|up)\b", query)}
    assert named - PROMETHEUS_OWN <= names, f"named but not served: {named - PROMETHEUS_OWN - names}"
