"""/metrics on a real API server (granian, two worker processes) while real Celery workers
(prefork builders, a threaded sender) build and send: their counts reach the scrape."""

import pytest
import requests

from devtools.processes import free_port, start_api
from devtools.waiting import wait_until
from omnium.delivery.models import DeliveryState
from omnium.feeds.models import FeedDocument
from tests import child_processes
from tests.conftest import ALL_QUEUES
from tests.delivery.fixtures import webhook_settings
from tests.delivery.test_delivery_workers import score
from tests.metrics.scraping import sample, scrape

pytestmark = [pytest.mark.worker, pytest.mark.servers]
TOKEN = "metrics-run-token"


@pytest.fixture
def metered_pipeline(transactional_db, clean_redis, tmp_path):
    """Builders, a sender, beat and an API server, all counting under one metrics directory."""
    env = {"OMNIUM_METRICS_DIR": tmp_path, "OMNIUM_METRICS_TOKEN": TOKEN, "OMNIUM_SWEEP_INTERVAL_S": 0.5}
    started = [child_processes.start_worker(ALL_QUEUES, "metered-builds", **env),
               child_processes.start_delivery_worker("metered-delivery", **env),
               child_processes.start_beat("metered-beat", **env)]
    port = free_port()
    api = start_api(port, "metered-api", child_processes.child_environment(**env), child_processes.LOG_DIR, workers=2)
    yield f"http://127.0.0.1:{port}"
    api.stop()
    for process in reversed(started):
        process.stop()


def delivered(destination) -> bool:
    current = FeedDocument.objects.get(doc_key=f"{destination.subscriptions.first().definition.games.code}/calendar")
    return DeliveryState.objects.filter(destination=destination, sent_seq=current.seq).exists()


def test_a_scrape_sees_the_sends_builds_and_failures_of_every_process(small_games, subscribe, receiver,
                                                                        metered_pipeline):
    api_url = metered_pipeline
    healthy = subscribe(small_games, webhook_settings(receiver.url))
    refusing = subscribe(small_games, webhook_settings(f"http://127.0.0.1:{free_port()}/closed"))
    wait_until(lambda: delivered(healthy), 15, message="first send")

    def first_send_counted():  # counted just after its proof is committed: a scrape in between saw 0
        scraped = scrape(api_url, TOKEN)
        return sample(scraped, "omnium_sends_total", transport="webhook") >= 1 and scraped

    before = wait_until(first_send_counted, 15, message="the first send counted")

    score(small_games, 77)
    seq_before = DeliveryState.objects.get(destination=healthy).sent_seq
    wait_until(lambda: DeliveryState.objects.get(destination=healthy).sent_seq > seq_before and delivered(healthy),
               15, message="the new version sent")
    requests.get(f"{api_url}/v1/feeds/{small_games.code}/calendar", timeout=5)  # no key: 401

    def failure_counted():
        scraped = scrape(api_url, TOKEN)  # the refusing destination's first try may still be under way
        return sample(scraped, "omnium_send_failures_total", transport="webhook", error_class="TransportError") and scraped

    after = wait_until(failure_counted, 15, message="the refused send counted")

    def moved(name, **labels):
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert moved("omnium_sends_total", transport="webhook") >= 1
    assert moved("omnium_delivery_freshness_seconds_count", transport="webhook", client="acme") >= 1
    assert moved("omnium_build_duration_seconds_count", feed_type="calendar", outcome="new_version") >= 1
    assert sample(after, "omnium_send_failures_total", transport="webhook", error_class="TransportError") >= 1
    assert moved("omnium_pull_requests_total", status="401") == 1
    assert sample(after, "omnium_owed_files", destination=str(refusing.pk)) == 1
    assert sample(after, "omnium_owed_files", destination=str(healthy.pk)) == 0
