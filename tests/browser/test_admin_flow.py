"""A person in a real browser (Debian's Chromium, driven by Playwright): log into the admin,
create a client with an SFTP destination, watch a delivery arrive on the status screen,
pause the destination and see it paused."""

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from devtools.loopback import servers
from omnium.transports.sftp import fingerprint, parse_host_key

pytestmark = pytest.mark.servers


@pytest.fixture
def sftp_server(tmp_path):
    server = servers.start_sshd(tmp_path)
    yield server
    server.process.stop()


def log_in(page, live_server, admin_user) -> None:
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", admin_user.username)
    page.fill("#id_password", "password")  # pytest-django's admin_user
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_be_visible()


def add_client(page, live_server, name: str) -> None:
    page.goto(f"{live_server.url}/admin/clients/client/add/")
    page.fill("#id_name", name)
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_contain_text(name)


def fill_sftp_settings(page, sftp_server, folder, *, port=None) -> None:
    """The SFTP fields of the typed form, and the private key (write-only: typed every time)."""
    page.fill("#id_sftp__host", "127.0.0.1")
    page.fill("#id_sftp__port", str(port or sftp_server.port))
    page.fill("#id_sftp__username", sftp_server.username)
    page.fill("#id_sftp__directory", str(folder))
    page.fill("#id_sftp__cred__private_key", sftp_server.client_key)


def test_an_admin_sets_up_sftp_delivery_sees_it_arrive_and_pauses_it(
        small_games, sftp_server, delivery_worker, live_server, admin_user, browser_page):
    page = browser_page  # from here on, only the browser touches the database (through the server)
    log_in(page, live_server, admin_user)
    add_client(page, live_server, "Sportstar")

    folder = sftp_server.root / "sportstar"
    folder.mkdir()
    page.goto(f"{live_server.url}/admin/clients/destination/add/")
    page.select_option("#id_client", label="Sportstar")
    page.fill("#id_name", "Sportstar over SFTP")
    page.select_option("#id_kind", value="sftp")
    fill_sftp_settings(page, sftp_server, folder)
    page.fill("#id_sftp__host_key", sftp_server.host_key)
    page.select_option("#id_subscriptions-0-definition", label=f"{small_games.code} medals")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_contain_text("Sportstar over SFTP")

    page.goto(f"{live_server.url}/admin/delivery/status/")
    page.click("table.status >> text=Sportstar")  # (the client filter lists it too)
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


# The admin guide's pictures (docs/admin-guide.md): taken on every run into var/screenshots/,
# from which `make test` builds the docs right after, so they always show today's admin.
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
SEND_TIMEOUT_S = 3


def test_an_admin_types_an_sftp_destination_pins_its_host_key_and_tests_the_connection(
        sftp_server, silent_host, live_server, admin_user, browser_page, delivery_worker):
    page = browser_page
    log_in(page, live_server, admin_user)
    add_client(page, live_server, "Courier")
    folder = sftp_server.root / "courier"
    folder.mkdir()

    # The kind decides which typed fields show.
    page.goto(f"{live_server.url}/admin/clients/destination/add/")
    page.select_option("#id_client", label="Courier")
    page.fill("#id_name", "Courier over SFTP")
    page.select_option("#id_kind", value="sftp")
    expect(page.locator("#id_sftp__port")).to_be_visible()
    expect(page.locator("#id_s3__bucket")).to_be_hidden()

    # Fetch the host key, see its fingerprint as OpenSSH prints it, and pin it on confirmation.
    fill_sftp_settings(page, sftp_server, folder)
    page.fill("#id_sftp__connect_timeout", "2")
    page.fill("#id_sftp__send_timeout", str(SEND_TIMEOUT_S))
    page.click("#fetch-host-key")
    expected = fingerprint(parse_host_key(sftp_server.host_key))  # "ssh-ed25519 SHA256:…"
    expect(page.locator("#host-key-offer")).to_contain_text(expected)
    expect(page.locator("#id_sftp__host_key")).to_have_value("")  # nothing pinned until confirmed
    page.locator(".field-sftp__host_key").screenshot(path=str(SCREENSHOTS / "admin-host-key.png"))
    page.click("#confirm-host-key")
    expect(page.locator("#id_sftp__host_key")).to_have_value(sftp_server.host_key.strip())

    # A wrong port: the error sits beside the port field, nothing is saved.
    page.fill("#id_sftp__port", "70000")
    page.click("input[name=_continue]")
    expect(page.locator(".field-sftp__port .errorlist")).to_contain_text("65535")
    expect(page.locator(".errorlist")).to_have_count(1)

    fill_sftp_settings(page, sftp_server, folder)  # the private key again: it is never sent back
    page.click("input[name=_continue]")
    expect(page.locator(".messagelist")).to_contain_text("Courier over SFTP")

    # Test connection against the real server: every step works.
    page.click("#test-connection")
    expect(page.locator(".connection-test h2")).to_contain_text("works")
    expect(page.locator(".connection-test")).to_contain_text("write a test file")
    page.screenshot(path=str(SCREENSHOTS / "admin-connection-test.png"), full_page=True)
    assert not list(folder.glob(".omnium-connection-test*")), "the test file was removed"

    # The same destination aimed at a host that accepts and never answers.
    page.click("text=back to Courier over SFTP")
    page.fill("#id_sftp__port", str(silent_host.port))
    page.fill("#id_sftp__cred__private_key", sftp_server.client_key)
    page.click("input[name=_continue]")
    started = time.monotonic()
    page.click("#test-connection")
    expect(page.locator(".plain-failure")).to_have_text("Connected, but the server did not answer within 2 s.")
    assert time.monotonic() - started < SEND_TIMEOUT_S + 3


def test_the_api_reference_draws_from_our_own_origin_within_the_content_security_policy(
        live_server, admin_user, browser_page):
    page = browser_page
    log_in(page, live_server, admin_user)

    answer = page.goto(f"{live_server.url}/v1/docs")

    assert "script-src 'self'" in answer.headers["content-security-policy"]
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Omnium pull API")
    expect(page.locator(".opblock-summary-path", has_text="/v1/medals/{games}")).to_be_visible()


def test_a_server_rotating_its_host_key_gets_the_new_key_pinned_beside_the_old(
        sftp_server, live_server, admin_user, browser_page, delivery_worker):
    """Issue 33: the offered key differs from the pinned one; the person pins it as the next
    key, and the old one stays until they remove it."""
    page = browser_page
    log_in(page, live_server, admin_user)
    add_client(page, live_server, "Rotator")
    page.goto(f"{live_server.url}/admin/clients/destination/add/")
    page.select_option("#id_kind", value="sftp")
    fill_sftp_settings(page, sftp_server, sftp_server.root)
    old_key = servers.other_host_keys()["changed"]
    page.fill("#id_sftp__host_key", old_key)

    page.click("#fetch-host-key")
    expect(page.locator("#host-key-offer")).to_contain_text("The server's key has changed")
    page.click("#confirm-next-host-key")

    expect(page.locator("#id_sftp__next_host_key")).to_have_value(sftp_server.host_key.strip())
    expect(page.locator("#id_sftp__host_key")).to_have_value(old_key)
