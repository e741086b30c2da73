"""The client portal in a real browser (issue 35): staff make a link in the admin, the client
opens it in a browser of its own, checks a file against its proof, pauses its destination,
cannot reach another client's by editing the address, and is refused once the link is
withdrawn or has expired. Debian's Chromium driven by Playwright."""

import hashlib
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from omnium.delivery.engine import sender
from omnium.delivery.models import SenderState
from omnium.portal.models import PortalLink
from tests.browser.conftest import watch
from tests.browser.test_admin_flow import SCREENSHOTS, log_in
from tests.delivery.fixtures import webhook_settings

pytestmark = pytest.mark.servers


def in_a_thread(query):
    """`query()` (the database) outside Playwright's event loop, where Django refuses it."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(query).result()


@pytest.fixture
def served(small_games, subscribe, receiver):
    """Acme and Rival, each with a webhook destination that has received the calendar: made
    before the browser starts (Django refuses the database inside Playwright's event loop)."""
    acme = subscribe(small_games, webhook_settings(receiver.url), client="Acme",
                     file_name_template="acme/{games}/{name}.{ext}")
    rival = subscribe(small_games, webhook_settings(receiver.url), client="Rival",
                      file_name_template="rival/{games}/{name}.{ext}")
    for destination in (acme, rival):
        assert sender.drain(destination.pk) == sender.Outcome.DRAINED
    return acme, rival


def make_link_in_the_admin(page, live_server, admin_user, client_id: int) -> str:
    log_in(page, live_server, admin_user)
    page.goto(f"{live_server.url}/admin/clients/client/{client_id}/change/")
    page.click("text=New portal link")
    page.fill("#id_note", "Acme's on-call engineers")
    page.select_option("#id_valid_for_days", value="7")
    page.click("input[name=_save]")
    return page.locator("#portal-address").inner_text()


def test_a_client_opens_its_portal_checks_a_file_pauses_and_is_refused_once_the_link_is_withdrawn(
        served, small_games, receiver, live_server, admin_user, browser_page):
    acme, rival = served
    staff = browser_page
    address = make_link_in_the_admin(staff, live_server, admin_user, acme.client_id)

    client = staff.context.browser.new_context().new_page()  # the client's own browser: no staff session
    client.set_default_timeout(15_000)
    blocked, elsewhere = watch(client, live_server.url)
    client.goto(address)

    assert client.url == f"{live_server.url}/portal/", "the secret leaves the address bar"
    received = receiver.received(f"acme/{small_games.code}/calendar.json")
    expect(client.locator("code.digest")).to_have_text(hashlib.sha256(received).hexdigest())
    expect(client.locator(".health")).to_have_text("Delivering normally.")
    expect(client.locator("main")).not_to_contain_text(rival.name)
    client.screenshot(path=str(SCREENSHOTS / "portal-deliveries.png"), full_page=True)

    client.fill(f"#reason-{acme.pk}", "we are deploying")
    client.click("button[value=pause]")
    expect(client.locator(".messages")).to_contain_text(f"Done: paused {acme.name}: we are deploying.")
    expect(client.locator("button[value=resume]")).to_be_visible()
    assert in_a_thread(lambda: SenderState.objects.get(pk=acme.pk).paused)

    # The client edits the form's address to name the other client's destination.
    client.locator("form.controls").evaluate(
        f"form => form.setAttribute('action', form.getAttribute('action').replace('/{acme.pk}/', '/{rival.pk}/'))")
    with client.expect_response(lambda response: f"/portal/destination/{rival.pk}/" in response.url) as edited:
        client.click("button[value=resend]")
    assert edited.value.status == 404
    assert not in_a_thread(lambda: SenderState.objects.filter(pk=rival.pk, paused=True).exists())

    staff.goto(f"{live_server.url}/admin/portal/portallink/")
    staff.check("input[name=_selected_action]")
    staff.select_option("select[name=action]", value="withdraw")
    staff.click("button[name=index]")
    expect(staff.locator(".messagelist")).to_contain_text("1 link(s) withdrawn")

    client.goto(f"{live_server.url}/portal/")
    expect(client.locator(".refusal")).to_have_text("This link was withdrawn.")
    assert blocked == [] and elsewhere == [], "the portal keeps within its Content-Security-Policy and origin"


def test_an_expired_link_opens_nothing_in_the_browser(served, live_server, admin_user, browser_page):
    acme, _ = served
    address = make_link_in_the_admin(browser_page, live_server, admin_user, acme.client_id)
    in_a_thread(lambda: PortalLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1)))

    client = browser_page.context.browser.new_context().new_page()
    answer = client.goto(address)

    assert answer.status == 403
    expect(client.locator(".refusal")).to_have_text("This link has expired.")
    expect(client.locator("main")).not_to_contain_text(acme.name)
