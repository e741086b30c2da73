"""What a client does through its portal beyond pausing and resending (issue 35): a new pull key
with the older ones' end, a webhook secret rotated with an overlap, a connection test run by a
real delivery worker, a file downloaded byte for byte as pushed, a received file checked
against our proof, and a sign-in of its own. Each on two clients: another client's ids act on
nothing, and each action is in the client's audit log."""

import hashlib
import re
import time
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client as Browser
from django.utils import timezone

from omnium.clients import key_format
from omnium.clients.models import ApiKey, Client, Destination
from omnium.delivery.engine import sender
from omnium.delivery.models import DeliveryState, Probe
from omnium.feeds.models import FeedDocument
from omnium.portal import links
from omnium.portal.models import PortalAccount, PortalAction
from omnium.transports.webhook import verify_signature
from tests.portal.conftest import WEEK, opened
from tests.transports.kits import WEBHOOK_SECRET

GOOD_PASSWORD = "pale-horse-battery-42"


def acme_browser(acme: Destination) -> Browser:
    return opened(links.make(acme.client, "acme on call", WEEK)[1])


def calendar_state(destination: Destination) -> DeliveryState:
    return DeliveryState.objects.get(destination=destination, doc_key__endswith="/calendar")


def test_a_new_pull_key_is_shown_once_and_the_older_keys_end_when_chosen(two_clients_served):
    acme, rival = two_clients_served
    old, _ = ApiKey.issue(acme.client, "production 2026")
    rivals, _ = ApiKey.issue(rival.client, "rival's")
    browser = acme_browser(acme)

    page = browser.post("/portal/keys/new/", {"name": "production 2027", "older_keys_end_in_days": "1"})

    plain = re.search(r'id="issued-key" class="secret" readonly size="60" value="([^"]+)"', page.content.decode())[1]
    new = ApiKey.objects.get(client=acme.client, name="production 2027")
    assert new.key_hash == key_format.digest(plain) and new.active
    assert page["Cache-Control"] == "no-store"
    old.refresh_from_db()
    assert timedelta(hours=23) < old.expires_at - timezone.now() <= timedelta(days=1)
    rivals.refresh_from_db()
    assert rivals.expires_at is None  # another client's keys are not touched
    assert plain not in browser.get("/portal/").content.decode()  # shown once
    assert PortalAction.objects.filter(client=acme.client, what__startswith="issued the pull key production 2027").exists()


def test_a_key_with_no_name_is_not_issued_and_the_page_says_why(two_clients_served):
    acme, _ = two_clients_served
    browser = acme_browser(acme)

    reply = browser.post("/portal/keys/new/", {"name": "", "older_keys_end_in_days": "7"}, follow=True)

    assert "No key issued: what the key is for: This field is required." in reply.content.decode()
    assert not ApiKey.objects.filter(client=acme.client).exists()


def test_a_keys_end_only_comes_sooner_and_another_clients_key_is_not_found(two_clients_served):
    acme, rival = two_clients_served
    soon = timezone.now() + timedelta(hours=1)
    key, _ = ApiKey.issue(acme.client, "old", expires_at=soon)
    rivals, _ = ApiKey.issue(rival.client, "rival's")
    browser = acme_browser(acme)

    browser.post(f"/portal/keys/{key.pk}/end/", {"end_in": "7d"})
    key.refresh_from_db()
    assert key.expires_at == soon  # not lengthened
    browser.post(f"/portal/keys/{key.pk}/end/", {"end_in": "0"})
    key.refresh_from_db()
    assert not key.active
    assert browser.post(f"/portal/keys/{rivals.pk}/end/", {"end_in": "0"}).status_code == 404
    rivals.refresh_from_db()
    assert rivals.active


def test_a_rotated_secret_signs_beside_the_old_one_for_the_overlap_so_either_receiver_verifies(
        two_clients_served, receiver):
    acme, _ = two_clients_served
    browser = acme_browser(acme)

    page = browser.post(f"/portal/destination/{acme.pk}/rotate-secret/", {"overlap_hours": "24"}).content.decode()

    new_secret = re.search(r'id="new-secret" class="secret" readonly size="60" value="(whsec_[^"]+)"', page)[1]
    acme.refresh_from_db()
    stored = acme.stored_credentials
    assert stored["secret"] == new_secret and stored["previous_secret"] == WEBHOOK_SECRET
    assert 23.9 * 3600 < stored["previous_secret_until"] - time.time() <= 24 * 3600
    state = calendar_state(acme)
    DeliveryState.objects.filter(pk=state.pk).update(force_resend=True)
    assert sender.drain(acme.pk) == sender.Outcome.DRAINED
    delivery = receiver.deliveries[-1]
    assert delivery.verified  # the receiver still on the old secret
    assert verify_signature(new_secret, delivery.headers, delivery.body)  # and one already on the new
    assert new_secret not in browser.get("/portal/").content.decode()
    assert new_secret not in PortalAction.objects.get(client=acme.client).what


def test_only_a_webhook_of_ones_own_with_a_chosen_overlap_is_rotated(two_clients_served):
    acme, rival = two_clients_served
    browser = acme_browser(acme)
    before = bytes(rival.credentials_encrypted)

    assert browser.post(f"/portal/destination/{rival.pk}/rotate-secret/", {"overlap_hours": "24"}).status_code == 404
    no_overlap = browser.post(f"/portal/destination/{acme.pk}/rotate-secret/", {"overlap_hours": "5"}, follow=True)

    assert "Choose how long the old secret signs beside the new one." in no_overlap.content.decode()
    acme.refresh_from_db()
    rival.refresh_from_db()
    assert acme.stored_credentials == {"secret": WEBHOOK_SECRET}
    assert bytes(rival.credentials_encrypted) == before
    Destination.objects.filter(pk=acme.pk).update(kind="redis")
    not_a_webhook = browser.post(f"/portal/destination/{acme.pk}/rotate-secret/", {"overlap_hours": "24"}, follow=True)
    assert "Only a webhook has a signing secret to rotate." in not_a_webhook.content.decode()


def test_a_download_is_byte_for_byte_what_the_destination_received(two_clients_served, receiver, small_games):
    acme, rival = two_clients_served
    browser = acme_browser(acme)

    reply = browser.get(f"/portal/file/{calendar_state(acme).pk}/download/")

    received = receiver.received(f"acme/{small_games.code}/calendar.json")
    body = b"".join(reply.streaming_content) if reply.streaming else reply.content
    assert body == received
    assert reply["Omnium-SHA256"] == hashlib.sha256(received).hexdigest()
    assert reply["Omnium-Version"] == str(FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar").seq)
    assert reply["Content-Disposition"] == 'attachment; filename="calendar.json"'
    assert browser.get(f"/portal/file/{calendar_state(rival).pk}/download/").status_code == 404


def test_a_file_checked_against_the_proof_names_its_version_and_another_clients_file_matches_nothing(
        two_clients_served, receiver, small_games):
    acme, _ = two_clients_served
    browser = acme_browser(acme)
    ours = receiver.received(f"acme/{small_games.code}/calendar.json")
    theirs = receiver.received(f"rival/{small_games.code}/calendar.json")

    uploaded = browser.post("/portal/check/", {"file": SimpleUploadedFile("calendar.json", ours)}).content.decode()
    pasted = browser.post("/portal/check/", {"sha256": hashlib.sha256(ours).hexdigest().upper()}).content.decode()
    foreign = browser.post("/portal/check/", {"file": SimpleUploadedFile("c.json", theirs)}).content.decode()
    nonsense = browser.post("/portal/check/", {"sha256": "not a digest"}).content.decode()

    version = FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar").seq
    for page in (uploaded, pasted):
        assert "are what we last sent" in page and f"<td>{version}</td>" in page and acme.name in page
    assert "No file we last sent you has these bytes" in foreign
    assert "Give a file, or a SHA-256 of 64 hexadecimal digits." in nonsense


def test_a_person_with_a_link_makes_a_sign_in_that_opens_only_their_clients_portal(two_clients_served):
    acme, rival = two_clients_served
    browser = acme_browser(acme)
    weak = browser.post("/portal/sign-in/new/", {"username": "ana", "password1": "password", "password2": "password"})
    assert "This password is too common." in weak.content.decode()
    browser.post("/portal/sign-in/new/", {"username": "ana", "password1": GOOD_PASSWORD, "password2": GOOD_PASSWORD})
    account = PortalAccount.objects.get(user__username="ana")
    assert account.client == acme.client and not account.user.is_staff

    own = Browser()
    answer = own.post("/portal/sign-in/", {"username": "ana", "password": GOOD_PASSWORD})
    assert answer.status_code == 302 and answer["Location"] == "/portal/"
    page = own.get("/portal/").content.decode()
    assert acme.name in page and rival.name not in page and "Signed in as <strong>ana</strong>" in page
    own.post(f"/portal/destination/{acme.pk}/", {"action": "pause", "reason": "deploying"})
    assert PortalAction.objects.filter(account=account, what__startswith="paused").exists()
    assert own.post(f"/portal/destination/{rival.pk}/", {"action": "pause", "reason": "x"}).status_code == 404
    assert own.get("/admin/").status_code == 302  # not staff: the admin does not open


def test_a_switched_off_sign_in_or_a_staff_password_opens_no_portal(two_clients_served, admin_user):
    acme, _ = two_clients_served
    user = get_user_model().objects.create_user("ben", password=GOOD_PASSWORD)
    PortalAccount.objects.create(user=user, client=acme.client)
    signed_in = Browser()
    signed_in.post("/portal/sign-in/", {"username": "ben", "password": GOOD_PASSWORD})
    assert signed_in.get("/portal/").status_code == 200

    get_user_model().objects.filter(pk=user.pk).update(is_active=False)

    assert signed_in.get("/portal/").status_code == 403
    again = Browser().post("/portal/sign-in/", {"username": "ben", "password": GOOD_PASSWORD}).content.decode()
    staff = Browser().post("/portal/sign-in/", {"username": admin_user.username, "password": "password"})
    assert "Please enter a correct username and password" in again
    assert "Please enter a correct username and password" in staff.content.decode()
    assert "_auth_user_id" not in staff.wsgi_request.session


def test_staff_switch_a_sign_in_off_in_the_admin_and_the_clients_history_says_so(admin_client, two_clients_served):
    acme, _ = two_clients_served
    user = get_user_model().objects.create_user("cy", password=GOOD_PASSWORD)
    account = PortalAccount.objects.create(user=user, client=acme.client)

    admin_client.post("/admin/portal/portalaccount/", {"action": "switch_off", "_selected_action": [account.pk]})

    user.refresh_from_db()
    assert not user.is_active
    history = admin_client.get(f"/admin/clients/client/{acme.client.pk}/history/").content.decode()
    assert "Portal sign-in cy switched off" in history


@pytest.fixture
def client_with_webhook(webhook_receiver):
    client = Client.objects.create(name="Sportstar")
    destination = Destination(client=client, name="hook", kind="webhook", config={"url": webhook_receiver.url})
    destination.set_credentials({"secret": WEBHOOK_SECRET})
    destination.save()
    return destination


def test_a_connection_test_runs_in_a_delivery_worker_and_its_page_fills_in(delivery_worker, client_with_webhook,
                                                                           webhook_receiver):
    destination = client_with_webhook
    browser = opened(links.make(destination.client, "on call", WEEK)[1])

    reply = browser.post(f"/portal/destination/{destination.pk}/test/")

    assert reply.status_code == 302 and reply["Location"].startswith("/portal/connection-test/")
    deadline = time.monotonic() + 30
    page = browser.get(reply["Location"]).content.decode()
    while "Waiting for its result" in page:
        assert 'http-equiv="refresh"' in page and time.monotonic() < deadline
        time.sleep(0.2)
        page = browser.get(reply["Location"]).content.decode()
    assert "It works." in page and 'http-equiv="refresh"' not in page
    assert webhook_receiver.deliveries[-1].headers["omnium-test"] == "true"
    probe = Probe.objects.get(destination=destination)
    assert probe.requested_by is None
    assert PortalAction.objects.filter(client=destination.client, what="tested the connection of hook").exists()
    other = opened(links.make(Client.objects.create(name="other"), "x", WEEK)[1])
    assert other.get(reply["Location"]).status_code == 404


def test_a_client_starts_no_more_connection_tests_a_minute_than_a_person_may(db, client_with_webhook, settings):
    destination = client_with_webhook
    settings.OMNIUM = {**settings.OMNIUM, "PROBES_AT_ONCE": 100, "PROBES_PER_PERSON_PER_MINUTE": 2}
    browser = opened(links.make(destination.client, "on call", WEEK)[1])

    answers = [browser.post(f"/portal/destination/{destination.pk}/test/", follow=True) for _ in range(3)]

    assert Probe.objects.filter(destination=destination).count() == 2
    assert "Not started: one person may start 2 tests a minute" in answers[-1].content.decode()
