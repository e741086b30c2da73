"""'Test connection' in the admin: it says in plain words what happened, step by step, logs a
test attempt, and leaves the destination's health, owed files and proof as they were."""

import time

import pytest

from omnium.clients.models import Client, Destination
from omnium.delivery.models import DeliveryAttempt, SenderState
from tests.transports.kits import WEBHOOK_SECRET

pytestmark = pytest.mark.django_db


def _webhook_destination(url: str, **config) -> Destination:
    destination = Destination(client=Client.objects.create(name="Sportstar"), name="hook", kind="webhook",
                              config={"url": url, **config})
    destination.set_credentials({"secret": WEBHOOK_SECRET})
    destination.save()
    return destination


def test_a_working_destination_is_reported_working_and_logged_as_a_test(admin_client, webhook_receiver):
    destination = _webhook_destination(webhook_receiver.url)

    page = admin_client.post(f"/admin/clients/destination/{destination.pk}/test-connection/").content.decode()

    assert "works" in page and "send a signed test webhook" in page
    attempt = DeliveryAttempt.objects.get(destination=destination)
    assert attempt.is_test and attempt.ok and attempt.duration_ms is not None
    assert webhook_receiver.deliveries[-1].headers["omnium-test"] == "true"
    assert not SenderState.objects.filter(destination=destination).exists()  # health untouched


SILENT_HOST_SENTENCES = ("The send did not finish within 2 s and was cut", "Connected, but the server did not answer within 2 s")


def test_a_silent_host_is_reported_in_plain_words_within_the_deadline(admin_client, silent_host):
    destination = _webhook_destination(f"http://127.0.0.1:{silent_host.port}/f", send_timeout=2, connect_timeout=1)
    started = time.monotonic()

    page = admin_client.post(f"/admin/clients/destination/{destination.pk}/test-connection/").content.decode()

    assert time.monotonic() - started < 2 + 2
    assert "failed" in page
    # The read timeout and the 2 s deadline end together: which one says so first is a race (the
    # read timeout wins on a loaded machine). Either sentence tells the admin what happened.
    said = [sentence for sentence in SILENT_HOST_SENTENCES if sentence in page]
    assert said, "the page names neither the deadline nor the missing answer"
    attempt = DeliveryAttempt.objects.get(destination=destination)
    assert attempt.is_test and attempt.ok is False and attempt.error.startswith(said[0])
    assert not SenderState.objects.filter(destination=destination).exists()


def test_the_admin_action_tests_every_selected_destination(admin_client, webhook_receiver):
    destination = _webhook_destination(webhook_receiver.url)

    page = admin_client.post("/admin/clients/destination/", {
        "action": "test_connection", "_selected_action": [destination.pk]}).content.decode()

    assert f'id="test-{destination.pk}"' in page and "works" in page


def test_the_destination_page_offers_the_test_button(admin_client, webhook_receiver):
    destination = _webhook_destination(webhook_receiver.url)

    page = admin_client.get(f"/admin/clients/destination/{destination.pk}/change/").content.decode()

    assert f'action="/admin/clients/destination/{destination.pk}/test-connection/"' in page
