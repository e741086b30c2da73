"""'Test connection' in the admin: a delivery worker runs it, never the request's thread; the page
says in plain words what happened, step by step, logs a test attempt, and leaves the
destination's health, owed files and proof as they were. Probes are capped in all and per person."""

import re
import time

import pytest

from omnium.clients.models import Client, Destination
from omnium.delivery.models import DeliveryAttempt, Probe, SenderState
from tests.transports.kits import WEBHOOK_SECRET

TESTS_PAGE = "/admin/clients/destination/connection-tests/"


def _webhook_destination(url: str, name: str = "hook", **config) -> Destination:
    client, _ = Client.objects.get_or_create(name="Sportstar")
    destination = Destination(client=client, name=name, kind="webhook", config={"url": url, **config})
    destination.set_credentials({"secret": WEBHOOK_SECRET})
    destination.save()
    return destination


def page_of_finished_tests(browser, reply, within_s: float = 30) -> str:
    """Follow the redirect to the tests' page and reload it, as its refresh does, until no test
    is waiting; the page then."""
    assert reply.status_code == 302 and reply["Location"].startswith(TESTS_PAGE), reply
    deadline = time.monotonic() + within_s
    while True:
        page = browser.get(reply["Location"]).content.decode()
        if "waiting for its result" not in page:
            assert 'http-equiv="refresh"' not in page
            return page
        assert 'http-equiv="refresh"' in page
        assert time.monotonic() < deadline, "a test still waits for its result"
        time.sleep(0.2)


def test_a_working_destination_is_reported_working_and_logged_as_a_test(admin_client, webhook_receiver,
                                                                        delivery_worker):
    destination = _webhook_destination(webhook_receiver.url)

    page = page_of_finished_tests(admin_client, admin_client.post(f"/admin/clients/destination/{destination.pk}/test-connection/"))

    assert "works" in page and "send a signed test webhook" in page
    attempt = DeliveryAttempt.objects.get(destination=destination)
    assert attempt.is_test and attempt.ok and attempt.duration_ms is not None
    assert webhook_receiver.deliveries[-1].headers["omnium-test"] == "true"
    assert not SenderState.objects.filter(destination=destination).exists()  # health untouched


SILENT_HOST_SENTENCES = ("The send did not finish within 2 s and was cut", "Connected, but the server did not answer within 2 s")


def test_a_silent_host_holds_no_request_and_is_reported_in_plain_words(admin_client, silent_host, delivery_worker):
    destination = _webhook_destination(f"http://127.0.0.1:{silent_host.port}/f", send_timeout=2, connect_timeout=1)
    started = time.monotonic()

    reply = admin_client.post(f"/admin/clients/destination/{destination.pk}/test-connection/")
    answered_in = time.monotonic() - started
    first_look = admin_client.get(reply["Location"]).content.decode()
    page = page_of_finished_tests(admin_client, reply)

    assert answered_in < 1.0, "the request waited for the host"
    assert "waiting for its result" in first_look
    assert "failed" in page
    # The read timeout and the 2 s deadline end together: which one says so first is a race (the
    # read timeout wins on a loaded machine). Either sentence tells the admin what happened.
    said = [sentence for sentence in SILENT_HOST_SENTENCES if sentence in page]
    assert said, "the page names neither the deadline nor the missing answer"
    attempt = DeliveryAttempt.objects.get(destination=destination)
    assert attempt.is_test and attempt.ok is False and attempt.error.startswith(said[0])
    assert not SenderState.objects.filter(destination=destination).exists()


def test_the_admin_action_tests_every_selected_destination(admin_client, webhook_receiver, delivery_worker):
    destinations = [_webhook_destination(webhook_receiver.url, name=f"hook {n}") for n in range(3)]

    reply = admin_client.post("/admin/clients/destination/", {
        "action": "test_connection", "_selected_action": [d.pk for d in destinations]})
    page = page_of_finished_tests(admin_client, reply)

    for destination in destinations:
        section = re.search(rf'id="test-{destination.pk}".*?</section>', page, re.S).group(0)
        assert "works" in section


@pytest.mark.django_db(transaction=True)
@pytest.mark.broker
def test_fifty_silent_destinations_selected_start_only_what_the_caps_allow_and_answer_at_once(
        admin_client, silent_host, settings):
    settings.OMNIUM = {**settings.OMNIUM, "PROBES_AT_ONCE": 8, "PROBES_PER_PERSON_PER_MINUTE": 12}
    silent = [_webhook_destination(f"http://127.0.0.1:{silent_host.port}/f", name=f"silent {n}", send_timeout=60)
              for n in range(50)]
    started = time.monotonic()

    reply = admin_client.post("/admin/clients/destination/", {
        "action": "test_connection", "_selected_action": [d.pk for d in silent]}, follow=True)

    assert time.monotonic() - started < 2.0
    assert Probe.objects.count() == 8
    shown = [str(message) for message in reply.context["messages"]]
    assert shown == ["42 of 50 tests were not started: at most 8 tests run at once; try the rest when these have finished."]
    assert reply.content.decode().count("waiting for its result") == 8


@pytest.mark.django_db(transaction=True)
def test_one_person_starts_at_most_so_many_tests_a_minute(admin_client, webhook_receiver, settings):
    settings.OMNIUM = {**settings.OMNIUM, "PROBES_AT_ONCE": 100, "PROBES_PER_PERSON_PER_MINUTE": 3}
    destination = _webhook_destination(webhook_receiver.url)

    replies = [admin_client.post(f"/admin/clients/destination/{destination.pk}/test-connection/", follow=True)
               for _ in range(4)]

    assert Probe.objects.count() == 3
    assert [str(m) for m in replies[-1].context["messages"]] == [
        "1 of 1 tests were not started: one person may start 3 tests a minute; try the rest in a minute."]


def test_the_destination_page_offers_the_test_button(admin_client, webhook_receiver, db):
    destination = _webhook_destination(webhook_receiver.url)

    page = admin_client.get(f"/admin/clients/destination/{destination.pk}/change/").content.decode()

    assert f'action="/admin/clients/destination/{destination.pk}/test-connection/"' in page


@pytest.mark.django_db(transaction=True)
def test_a_person_sees_only_their_own_tests(admin_client, webhook_receiver, django_user_model, client):
    destination = _webhook_destination(webhook_receiver.url)
    reply = admin_client.post(f"/admin/clients/destination/{destination.pk}/test-connection/")
    colleague = django_user_model.objects.create_user("colleague", password="x", is_staff=True)
    client.force_login(colleague)

    page = client.get(reply["Location"]).content.decode()

    assert f'id="test-{destination.pk}"' not in page and "someone else's" in page
