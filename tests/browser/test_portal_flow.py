"""The client portal in a real browser (issue 35): staff make a link in the admin, the client
opens it in a browser of its own, checks a file against its proof, pauses its destination,
cannot reach another client's by editing the address, and is refused once the link is
withdrawn or has expired. It rotates its webhook secret, issues a pull key, downloads a file
and checks it, makes a sign-in of its own, and tests its connection (with JavaScript off).
Debian's Chromium driven by Playwright."""

import hashlib
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from omnium.clients import key_format
from omnium.clients.models import ApiKey, Destination
from omnium.delivery.engine import sender
from omnium.delivery.models import DeliveryState, SenderState
from omnium.portal import links
from omnium.portal.models import PortalLink
from tests.browser.conftest import watch
from tests.browser.test_admin_flow import SCREENSHOTS, log_in
from tests.delivery.fixtures import webhook_settings
from tests.transports.kits import WEBHOOK_SECRET

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
    client.click("button[value=resume]")
    expect(client.locator(".messages")).to_contain_text(f"Done: resumed {acme.name}.")
    assert not in_a_thread(lambda: SenderState.objects.get(pk=acme.pk).paused)
    client.click("button[value=resend]")
    expect(client.locator(".messages")).to_contain_text(f"Done: asked to resend every file of {acme.name}")
    client.click(f"button[aria-label='Resend acme/{small_games.code}/calendar.json']")
    expect(client.locator(".messages")).to_contain_text(f"Done: asked to resend {small_games.code}/calendar")
    assert in_a_thread(lambda: DeliveryState.objects.filter(destination=acme, force_resend=True).exists())

    # The client edits the form's address to name the other client's destination.
    client.locator(f"form[action='/portal/destination/{acme.pk}/']").evaluate(
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


def test_a_client_rotates_its_secret_issues_a_key_downloads_and_checks_a_file_and_makes_its_own_sign_in(
        served, small_games, receiver, live_server, admin_user, browser_page):
    acme, rival = served
    old_key = in_a_thread(lambda: ApiKey.issue(acme.client, "production 2026")[0])
    address = make_link_in_the_admin(browser_page, live_server, admin_user, acme.client_id)
    client = browser_page.context.browser.new_context().new_page()
    client.set_default_timeout(15_000)
    blocked, elsewhere = watch(client, live_server.url)
    client.goto(address)

    client.select_option(f"#overlap-{acme.pk}", value="72")
    client.click("text=Rotate the signing secret")
    new_secret = client.locator("#new-secret").input_value()
    stored = in_a_thread(lambda: Destination.objects.get(pk=acme.pk).stored_credentials)
    assert stored["secret"] == new_secret and stored["previous_secret"] == WEBHOOK_SECRET
    client.click("text=Back to your deliveries")
    expect(client.locator("#actions + ul")).to_contain_text(f"rotated the signing secret of {acme.name}")

    client.fill("#id_name", "production 2027")
    client.select_option("#id_older_keys_end_in_days", value="1")
    client.click("text=Issue the key")
    plain = client.locator("#issued-key").input_value()
    expect(client.locator("main")).to_contain_text(f"{old_key.lookup_id}… (production 2026)")
    new_key = in_a_thread(lambda: ApiKey.objects.get(client=acme.client, name="production 2027"))
    assert new_key.key_hash == key_format.digest(plain)
    client.click("text=Back to your deliveries")
    client.select_option(f"#end-{old_key.pk}", value="0")
    client.click(f"button[aria-label='Set when {old_key.lookup_id} stops working']")
    expect(client.locator(".messages")).to_contain_text("to stop working now")
    assert not in_a_thread(lambda: ApiKey.objects.get(pk=old_key.pk).active)

    with client.expect_download() as download:
        client.click(f"a[aria-label^='Download acme/{small_games.code}/calendar.json']")
    downloaded = download.value.path().read_bytes()
    assert downloaded == receiver.received(f"acme/{small_games.code}/calendar.json")

    client.click("nav >> text=Check a file")
    client.set_input_files("#file", files=[{"name": "calendar.json", "mimeType": "application/json",
                                            "buffer": downloaded}])
    client.click("main button:text-is('Check')")
    expect(client.locator("[role=status]")).to_contain_text("are what we last sent")
    expect(client.locator("[role=status]")).to_contain_text(acme.name)

    client.goto(f"{live_server.url}/portal/sign-in/new/")
    client.fill("#id_username", "ana")
    client.fill("#id_password1", "pale-horse-battery-42")
    client.fill("#id_password2", "pale-horse-battery-42")
    client.click("text=Make the sign-in")
    expect(client.locator(".messages")).to_contain_text("Done: made the sign-in ana.")

    own = browser_page.context.browser.new_context().new_page()  # another browser: no link
    own.goto(f"{live_server.url}/portal/sign-in/")
    own.fill("#id_username", "ana")
    own.fill("#id_password", "pale-horse-battery-42")
    own.click("button:has-text('Sign in')")
    expect(own.locator("#sign-in + p")).to_contain_text("Signed in as ana")
    expect(own.locator("main")).not_to_contain_text(rival.name)
    own.goto(f"{live_server.url}/portal/file/{rival_state_id(rival)}/download/")
    expect(own.locator("body")).not_to_contain_text(rival.name)
    assert blocked == [] and elsewhere == [], "the portal keeps within its Content-Security-Policy and origin"


def rival_state_id(rival) -> int:
    return in_a_thread(lambda: DeliveryState.objects.filter(destination=rival).values_list("pk", flat=True).first())


def test_a_client_tests_its_connection_and_the_page_fills_in_without_javascript(
        served, live_server, admin_user, browser_page, delivery_worker, receiver):
    acme, _ = served
    address = make_link_in_the_admin(browser_page, live_server, admin_user, acme.client_id)
    context = browser_page.context.browser.new_context(java_script_enabled=False)
    client = context.new_page()
    client.set_default_timeout(30_000)
    client.goto(address)

    client.locator(f"form[action='/portal/destination/{acme.pk}/test/'] button").click()

    expect(client.locator(".test-result")).to_contain_text("It works.")  # the page's refresh brought it
    assert receiver.deliveries[-1].headers["omnium-test"] == "true"


AXE = Path(__file__).resolve().parents[2] / ".tools" / "axe-core" / "node_modules" / "axe-core" / "axe.min.js"
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
# Each violation as "rule: what it asks (how many elements): the first few elements".
AXE_RUN = """async tags => (await axe.run(document, {runOnly: {type: 'tag', values: tags}})).violations.map(
    v => `${v.id}: ${v.help} (${v.nodes.length}): ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')}`)"""


def accessibility_violations(page) -> list[str]:
    """What axe-core (Deque's rules, installed by scripts/test-servers) finds against WCAG 2.2 AA
    on the page as it stands: labels, contrast, landmarks, names of buttons and links…"""
    page.add_script_tag(path=str(AXE))
    return [f"{page.url}: {violation}" for violation in page.evaluate(AXE_RUN, WCAG_AA)]


def test_every_portal_page_meets_wcag_aa_as_axe_checks_it(served, live_server, browser_page):
    acme, _ = served
    in_a_thread(lambda: ApiKey.issue(acme.client, "production 2026"))
    token = in_a_thread(lambda: links.make(acme.client, "accessibility", timedelta(days=1))[1])
    # axe is put into each page as a script of the test's own: the portal's policy rightly forbids it.
    context = browser_page.context.browser.new_context(bypass_csp=True)
    page = context.new_page()
    page.goto(f"{live_server.url}/portal/open/{token}/")
    found = []
    for address in ("/portal/", "/portal/freshness/", "/portal/check/", "/portal/sign-in/new/"):
        page.goto(f"{live_server.url}{address}")
        found += accessibility_violations(page)
    page.goto(f"{live_server.url}/portal/")
    page.fill("#id_name", "production 2027")
    page.click("text=Issue the key")
    found += accessibility_violations(page)
    page.click("text=Back to your deliveries")
    page.click("text=Rotate the signing secret")
    found += accessibility_violations(page)
    page.click("nav >> text=Leave the portal")
    found += accessibility_violations(page)
    page.goto(f"{live_server.url}/portal/sign-in/")
    found += accessibility_violations(page)

    assert found == []
