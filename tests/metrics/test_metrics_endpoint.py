"""/metrics: who may read it, and what it says, in one process (no worker, no server)."""

import pytest

from omnium.delivery.models import DeliveryState
from tests.delivery.fixtures import webhook_settings
from tests.metrics.scraping import sample

TOKEN = "metrics-test-token"


@pytest.fixture
def metrics_token(settings):
    settings.OMNIUM = {**settings.OMNIUM, "METRICS_TOKEN": TOKEN}


@pytest.mark.django_db
def test_metrics_refuse_a_missing_or_wrong_token(client, metrics_token):
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 401


@pytest.mark.django_db
def test_metrics_refuse_everyone_when_no_token_is_set_but_staff(client, admin_client, django_user_model):
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    assert admin_client.get("/metrics").status_code == 200
    client.force_login(django_user_model.objects.create_user("someone", password="x"))
    assert client.get("/metrics").status_code == 403


def test_metrics_count_owed_files_per_destination_from_the_database(small_games, subscribe, client, metrics_token):
    destination = subscribe(small_games, webhook_settings("http://127.0.0.1:9/never"),
                            feed_types=("calendar", "medals"))
    owed = DeliveryState.objects.filter(destination=destination).count()

    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    text = response.content.decode()
    assert owed == 2
    assert sample(text, "omnium_owed_files", destination=str(destination.pk), transport="webhook",
                  client="acme") == owed
    assert sample(text, "omnium_owed_files_all") == owed


@pytest.mark.django_db
def test_pull_answers_are_counted_by_status(client, metrics_token):
    before = sample(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode(),
                    "omnium_pull_requests_total", status="401")
    assert client.get("/v1/feeds/xx1/calendar").status_code == 401

    text = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    assert sample(text, "omnium_pull_requests_total", status="401") == before + 1
