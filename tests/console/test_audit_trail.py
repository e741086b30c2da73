"""Operator actions leave a record of who did what, in the admin's history (issue 31): pause,
resume, retry, resend, replay dead letters, a connection test, a package applied."""

import pytest
from django.contrib.admin.models import LogEntry

from omnium.clients.models import Client, Destination, Package
from omnium.delivery.models import DeliveryState
from tests.console.test_least_privilege import _a_definition

pytestmark = pytest.mark.django_db


@pytest.fixture
def destination():
    client = Client.objects.create(name="NDTV")
    return Destination.objects.create(client=client, name="NDTV webhook", kind="webhook",
                                      config={"url": "http://127.0.0.1:9/hook"})


def history(obj) -> list[tuple[str, str]]:
    entries = LogEntry.objects.filter(object_id=str(obj.pk), content_type__model=obj._meta.model_name)
    return [(entry.user.username, entry.change_message) for entry in entries.order_by("action_time", "pk")]


def test_each_control_of_a_destination_is_in_its_history_with_who_did_it(admin_client, destination, clean_redis):
    subscription = destination.subscriptions.create(definition=_a_definition())
    state = DeliveryState.objects.create(subscription=subscription, destination=destination, doc_key="ag1/medals",
                                         dead_lettered_at="2026-12-01T00:00Z")
    control = f"/admin/delivery/status/destination/{destination.pk}/control/"

    admin_client.post(control, {"action": "pause", "reason": "client deploying"})
    admin_client.post("/admin/clients/destination/", {"action": "resume", "_selected_action": [destination.pk]})
    admin_client.post(control, {"action": "retry"})
    admin_client.post(control, {"action": "replay"})
    admin_client.post("/admin/delivery/deliverystate/", {"action": "resend", "_selected_action": [state.pk]})

    assert history(destination) == [
        ("admin", "Paused: client deploying"), ("admin", "Resumed"), ("admin", "Retried now (back-off wait skipped)"),
        ("admin", "Dead letters replayed: ag1/medals"), ("admin", "Resent: ag1/medals")]


@pytest.mark.django_db(transaction=True)
def test_a_connection_test_and_a_package_applied_are_in_the_history(admin_client, destination, clean_redis):
    pull_client = Client.objects.create(name="charlie")
    package = Package.objects.create(name="Medals")
    package.definitions.set([_a_definition()])

    admin_client.post(f"/admin/clients/destination/{destination.pk}/test-connection/")
    admin_client.post(f"/admin/clients/package/{package.pk}/change/", {
        "name": "Medals", "description": "", "definitions": [package.definitions.get().pk],
        "subscribe_destinations": [destination.pk], "entitle_clients": [pull_client.pk]})

    assert history(destination)[0] == ("admin", "Connection tested")
    assert history(destination)[-1] == ("admin", "Package Medals applied: subscriptions 1 new, 0 switched on again, 0 already there")
    assert history(pull_client) == [("admin", "Package Medals applied: entitlements 1 new, 0 switched on again, 0 already there")]
