"""The client portal (issue 35): opened by a link staff make, it shows one client's
deliveries with the proof a client can check (the SHA-256 of the bytes it received), and
nothing of any other client; an expired, withdrawn or unknown link opens nothing."""

import hashlib
import re
from datetime import date, timedelta

from django.contrib.admin.models import LogEntry
from django.test import Client as Browser
from django.utils import timezone

from omnium.clients.models import Destination
from omnium.delivery.models import DeliveryState, SenderState
from omnium.feeds.models import FeedDocument
from omnium.portal import links
from omnium.portal.models import PortalAction, PortalLink
from omnium.reports.models import FreshnessDay
from tests.portal.conftest import WEEK, opened


def test_a_link_opens_its_clients_deliveries_with_the_digest_of_the_bytes_received(two_clients_served, receiver,
                                                                                   small_games):
    acme, rival = two_clients_served
    _, token = links.make(acme.client, "acme on call", WEEK)
    browser = opened(token)

    page = browser.get("/portal/").content.decode()

    received = receiver.received(f"acme/{small_games.code}/calendar.json")
    version = FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar").seq
    assert hashlib.sha256(received).hexdigest() in page
    assert f"<td>{version}</td><td>{version}</td>" in page  # the version we hold, and the one received
    assert acme.name in page and "Delivering normally." in page
    rival_bytes = receiver.received(f"rival/{small_games.code}/calendar.json")
    assert rival_bytes != received
    assert rival.name not in page and hashlib.sha256(rival_bytes).hexdigest() not in page
    assert token not in page


def test_the_freshness_report_and_its_csv_are_the_clients_own_days(two_clients_served):
    acme, rival = two_clients_served
    for destination, sent in ((acme, 111), (rival, 999)):
        FreshnessDay.objects.create(client=destination.client, day=date(2026, 12, 1), versions_sent=sent,
                                    within_10s=sent, within_60s=sent, failures=0)
    _, token = links.make(acme.client, "acme", WEEK)
    browser = opened(token)

    page = browser.get("/portal/freshness/").content.decode()
    csv = browser.get("/portal/freshness/?format=csv").content.decode()

    assert ">111<" in page and "999" not in page
    assert "111" in csv and "999" not in csv


def test_no_page_without_a_link_and_an_expired_withdrawn_or_unknown_link_opens_nothing(two_clients_served):
    acme, _ = two_clients_served
    for path in ("/portal/", "/portal/freshness/", "/portal/freshness/?format=csv"):
        assert Browser().get(path).status_code == 403

    expired, expired_token = links.make(acme.client, "old", WEEK)
    PortalLink.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    answer = Browser().get(f"/portal/open/{expired_token}/")
    assert answer.status_code == 403 and "This link has expired." in answer.content.decode()

    answer = Browser().get(f"/portal/open/{expired_token[:-2]}xy/")
    assert answer.status_code == 403 and "This link is not known." in answer.content.decode()


def test_withdrawing_a_link_ends_the_sessions_it_opened_at_their_next_page(two_clients_served):
    acme, _ = two_clients_served
    link, token = links.make(acme.client, "acme", WEEK)
    browser = opened(token)
    assert browser.get("/portal/").status_code == 200

    link.revoke()

    answer = browser.get("/portal/")
    assert answer.status_code == 403 and "This link was withdrawn." in answer.content.decode()
    assert Browser().get(f"/portal/open/{token}/").status_code == 403


def test_a_switched_off_client_has_no_portal(two_clients_served):
    acme, _ = two_clients_served
    _, token = links.make(acme.client, "acme", WEEK)
    browser = opened(token)

    acme.client.switch_off("contract ended")

    assert browser.get("/portal/").status_code == 403


def test_leaving_the_portal_ends_the_session(two_clients_served):
    acme, _ = two_clients_served
    _, token = links.make(acme.client, "acme", WEEK)
    browser = opened(token)

    assert browser.post("/portal/sign-out/").status_code == 200
    assert browser.get("/portal/").status_code == 403


def test_staff_make_a_link_in_the_admin_see_its_address_once_and_withdraw_it(admin_client, two_clients_served):
    acme, _ = two_clients_served

    answer = admin_client.post("/admin/portal/portallink/add/",
                               {"client": acme.client.pk, "note": "acme on call", "valid_for_days": 30})

    page = answer.content.decode()
    address = re.search(r'<code id="portal-address">http://testserver(/portal/open/[^<]+)</code>', page).group(1)
    assert "no-store" in answer["Cache-Control"]
    link = PortalLink.objects.get()
    token = address.removeprefix("/portal/open/").rstrip("/")
    assert link.token_hash == hashlib.sha256(token.encode()).hexdigest() and token not in link.token_hash
    assert timedelta(days=29) < link.expires_at - timezone.now() <= timedelta(days=30)
    assert opened(token).get("/portal/").status_code == 200
    listing = admin_client.get(f"/admin/portal/portallink/?client__id__exact={acme.client.pk}").content.decode()
    assert "acme on call" in listing and token not in listing

    admin_client.post("/admin/portal/portallink/", {"action": "withdraw", "_selected_action": [link.pk]})

    assert opened_refused(token)
    assert [entry.change_message for entry in LogEntry.objects.filter(object_id=str(acme.client.pk), content_type__model="client")
            .order_by("pk")][-2:] == [f"Portal link made: acme on call (until {link.expires_at:%Y-%m-%d %H:%M} UTC)",
                                      "Portal link withdrawn: acme on call"]


def opened_refused(token: str) -> bool:
    return Browser().get(f"/portal/open/{token}/").status_code == 403


def test_a_destination_of_another_client_is_never_on_the_page(two_clients_served):
    acme, rival = two_clients_served
    Destination.objects.filter(pk=rival.pk).update(name="rival secret feed")
    _, token = links.make(acme.client, "acme", WEEK)

    page = opened(token).get("/portal/").content.decode()

    assert "rival secret feed" not in page and "rival" not in page


def test_the_client_pauses_with_a_reason_resumes_and_resends_and_each_is_in_its_audit_log(two_clients_served):
    acme, _ = two_clients_served
    link, token = links.make(acme.client, "acme on call", WEEK)
    browser = opened(token)
    action = f"/portal/destination/{acme.pk}/"

    refused_pause = browser.post(action, {"action": "pause", "reason": " "}, follow=True).content.decode()
    assert "Say why you pause it" in refused_pause and not SenderState.objects.filter(pk=acme.pk, paused=True).exists()

    browser.post(action, {"action": "pause", "reason": "deploying"})
    assert SenderState.objects.get(pk=acme.pk).paused
    assert "by the client: deploying" in SenderState.objects.get(pk=acme.pk).paused_reason
    browser.post(action, {"action": "resume"})
    assert not SenderState.objects.get(pk=acme.pk).paused
    state = DeliveryState.objects.get(destination=acme)
    browser.post(f"/portal/file/{state.pk}/resend/")
    assert DeliveryState.objects.get(pk=state.pk).force_resend
    DeliveryState.objects.filter(pk=state.pk).update(force_resend=False)
    page = browser.post(action, {"action": "resend"}, follow=True).content.decode()
    assert DeliveryState.objects.get(pk=state.pk).force_resend

    assert list(PortalAction.objects.order_by("pk").values_list("what", "link", "client")) == [
        (f"paused {acme.name}: deploying", link.pk, acme.client_id),
        (f"resumed {acme.name}", link.pk, acme.client_id),
        (f"asked to resend {state.doc_key} to {acme.name}", link.pk, acme.client_id),
        (f"asked to resend every file of {acme.name} (1)", link.pk, acme.client_id)]
    assert f"asked to resend every file of {acme.name} (1)" in page  # said, and listed on the page


def test_another_clients_ids_in_the_portals_addresses_act_on_nothing(two_clients_served):
    acme, rival = two_clients_served
    _, token = links.make(acme.client, "acme", WEEK)
    browser = opened(token)
    rival_state = DeliveryState.objects.get(destination=rival)

    assert browser.post(f"/portal/destination/{rival.pk}/", {"action": "pause", "reason": "x"}).status_code == 404
    assert browser.post(f"/portal/destination/{rival.pk}/", {"action": "resend"}).status_code == 404
    assert browser.post(f"/portal/file/{rival_state.pk}/resend/").status_code == 404

    assert not SenderState.objects.filter(pk=rival.pk, paused=True).exists()
    assert not DeliveryState.objects.get(pk=rival_state.pk).force_resend
    assert not PortalAction.objects.exists()


def test_an_action_without_a_portal_session_is_refused(two_clients_served):
    acme, _ = two_clients_served
    browser = Browser(enforce_csrf_checks=False)

    assert browser.post(f"/portal/destination/{acme.pk}/", {"action": "pause", "reason": "x"}).status_code == 403
    assert not SenderState.objects.filter(pk=acme.pk, paused=True).exists()
