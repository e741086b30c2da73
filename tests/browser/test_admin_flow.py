"""A person in a real browser (Debian's Chromium, driven by Playwright): log into the admin,
create a client with an SFTP destination, watch a delivery arrive on the status screen,
pause the destination and see it paused."""

import json
import re

import pytest
from playwright.sync_api import expect, sync_playwright

from devtools.loopback import servers
from tests import child_processes

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.servers


@pytest.fixture
def sftp_server(tmp_path):
    server = servers.start_sshd(tmp_path)
    yield server
    server.process.stop()


@pytest.fixture
def delivery_worker(transactional_db, clean_redis):
    worker = child_processes.start_delivery_worker("browser-delivery", OMNIUM_SWEEP_INTERVAL_S=0.5)
    yield worker
    worker.stop()


@pytest.fixture
def browser_page():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page()
        page.set_default_timeout(15_000)
        yield page
        browser.close()


def test_an_admin_sets_up_sftp_delivery_sees_it_arrive_and_pauses_it(
        small_games, sftp_server, delivery_worker, live_server, admin_user, browser_page):
    page = browser_page  # from here on, only the browser touches the database (through the server)

    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", admin_user.username)
    page.fill("#id_password", "password")  # pytest-django's admin_user
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_be_visible()

    page.goto(f"{live_server.url}/admin/clients/client/add/")
    page.fill("#id_name", "Sportstar")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_contain_text("Sportstar")

    folder = sftp_server.root / "sportstar"
    folder.mkdir()
    page.goto(f"{live_server.url}/admin/clients/destination/add/")
    page.select_option("#id_client", label="Sportstar")
    page.fill("#id_name", "Sportstar over SFTP")
    page.select_option("#id_kind", value="sftp")
    page.fill("#id_config", json.dumps({"host": "127.0.0.1", "port": sftp_server.port, "username": sftp_server.username,
                                        "host_key": sftp_server.host_key, "directory": str(folder)}))
    page.fill("#id_new_credentials", json.dumps({"private_key": sftp_server.client_key}))
    page.select_option("#id_subscriptions-0-definition", label=f"{small_games.code} medals")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_contain_text("Sportstar over SFTP")

    page.goto(f"{live_server.url}/admin/delivery/status/")
    page.click("text=Sportstar")
    for _ in range(30):  # the delivery worker sends within a second or two
        if page.locator("td", has_text=re.compile(r"size=\d+ path=")).count():
            break
        page.wait_for_timeout(500)
        page.reload()
    expect(page.locator("td", has_text=re.compile(r"size=\d+ path="))).to_be_visible()
    expect(page.locator("td", has_text="up to date")).to_be_visible()
    assert (folder / f"{small_games.code}" / "medals.json").exists()

    page.fill("input[name=reason]", "client's server maintenance")
    page.click("button[value=pause]")
    expect(page.locator(".destination-status")).to_have_text("paused")
    expect(page.locator("text=paused: client's server maintenance")).to_be_visible()
