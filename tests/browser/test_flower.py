"""An operator in Flower (issue 32): from a client's destination in the admin to its queue in
Flower's broker page, and a build as a task in Flower's task list. Real Flower, a real build
worker and RabbitMQ's management API; Debian's Chromium driven by Playwright."""

import secrets

import pytest
import requests
from django.conf import settings
from playwright.sync_api import expect, sync_playwright

from devtools import processes
from devtools.processes import free_port
from devtools.waiting import wait_until
from omnium.routing import delivery_queue
from tests import child_processes
from tests.browser.conftest import CHROMIUM, CHROMIUM_FLAGS
from tests.conftest import LIVE_QUEUES
from tests.delivery.fixtures import redis_destination_settings
from tests.delivery.test_delivery_workers import calendar_seq, score

pytestmark = pytest.mark.servers


@pytest.fixture
def flower():
    """Flower on a free port with a password, as deploy/systemd/omnium-flower.service runs it."""
    port, password = free_port(), secrets.token_urlsafe(12)
    process = processes.ManagedProcess(
        [*processes.CELERY, "flower", "--address=127.0.0.1", f"--port={port}", f"--basic-auth=ops:{password}",
         f"--broker_api={settings.CELERY_BROKER_MANAGEMENT_URL}"],
        "flower", child_processes.child_environment(), child_processes.LOG_DIR)
    process.wait_for_port(port)
    yield f"http://127.0.0.1:{port}", password
    process.stop()


@pytest.fixture
def workers(transactional_db):
    """A live build worker and a delivery worker: Flower lists the queues that workers consume."""
    started = [child_processes.start_worker(LIVE_QUEUES, "builds-for-flower"),
               child_processes.start_delivery_worker("delivery-for-flower")]
    yield started
    for worker in reversed(started):
        worker.stop()


def _broker_page_shows(page, flower_url: str, queue: str) -> bool:
    """Whether Flower's broker page lists `queue`. Flower lists the queues its last inspection
    of the workers found consumed: the workers page's refresh (an operator's click) inspects
    them again."""
    page.goto(f"{flower_url}/workers?refresh=1")
    page.goto(f"{flower_url}/broker")
    return page.get_by_text(queue, exact=True).count() > 0


def test_an_operator_finds_a_clients_queue_and_a_build_in_flower(
        small_games, subscribe, flower, workers, live_server, admin_user, settings):
    flower_url, password = flower
    settings.OMNIUM = {**settings.OMNIUM, "FLOWER_URL": flower_url}
    destination = subscribe(small_games, redis_destination_settings(), client="Sportstar")  # its kick waits
    queue = delivery_queue(destination.pk)
    # Builds as Flower sees them: a change, built by the live worker once Flower has turned its
    # task events on (Flower asks the workers every few seconds).
    wait_until(lambda: _build_seen_by_flower(small_games, flower_url, password), 40, interval=0.5,
               message="a build task in Flower")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_context(http_credentials={"username": "ops", "password": password}).new_page()
        page.set_default_timeout(15_000)
        # The admin: the client's destination, and the link to its queue.
        page.goto(f"{live_server.url}/admin/login/")
        page.fill("#id_username", admin_user.username)
        page.fill("#id_password", "password")
        page.click("input[type=submit]")
        page.goto(f"{live_server.url}/admin/clients/destination/?q=Sportstar")
        row = page.locator("#result_list tbody tr", has_text="Sportstar")
        expect(row.get_by_role("link", name=queue)).to_have_attribute("href", f"{flower_url}/broker")
        page.goto(f"{live_server.url}/admin/clients/destination/{destination.pk}/change/")
        expect(page.locator("#flower-queue")).to_have_attribute("href", f"{flower_url}/broker")
        # Flower's broker page lists the queue (its depth and consumers from RabbitMQ's
        # management API) once the workers have answered Flower's inspection.
        wait_until(lambda: _broker_page_shows(page, flower_url, queue), 30, interval=1,
                   message=f"{queue} in Flower's broker page")
        page.goto(f"{flower_url}/tasks")
        expect(page.locator("#tasks-table")).to_contain_text("omnium.feeds.tasks.")
        browser.close()


def _build_seen_by_flower(games, flower_url: str, password: str) -> bool:
    before = calendar_seq(games)
    score(games, secrets.randbelow(10_000))
    wait_until(lambda: calendar_seq(games) > before, 20, message="the calendar rebuilt")
    tasks = requests.get(f"{flower_url}/api/tasks", auth=("ops", password), timeout=5).json()
    return any(task["name"].startswith("omnium.feeds.tasks.") for task in tasks.values() if task.get("name"))
