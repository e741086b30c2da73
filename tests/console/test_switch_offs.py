"""Every switch-off (delivery everywhere, a client, a destination disabled, fenced or paused)
needs a reason and records who and when; the status screens show all of it, the global switch
at the top."""

import pytest

from omnium.clients.models import Client, Destination
from omnium.delivery.models import DeliverySwitch
from omnium.delivery.operations import control
from tests.transports.kits import WEBHOOK_SECRET

pytestmark = pytest.mark.django_db


@pytest.fixture
def destination():
    client = Client.objects.create(name="ScoreApp")
    row = Destination.objects.create(client=client, name="ScoreApp webhook", kind="webhook",
                                     config={"url": "http://127.0.0.1:9/hook"})
    row.set_credentials({"secret": WEBHOOK_SECRET})
    row.save()
    return row


def _destination_form(destination, **changes) -> dict:
    form = {"client": destination.client_id, "name": destination.name, "kind": "webhook",
            "webhook__url": destination.config["url"], "webhook__cred__secret": "", "enabled": "on",
            "fast_retries": 5, "fence_reason": "", "disabled_reason": "",
            "subscriptions-TOTAL_FORMS": 0, "subscriptions-INITIAL_FORMS": 0}
    return {**form, **changes}


def _disable(admin_client, destination, reason: str):
    form = _destination_form(destination, disabled_reason=reason)
    del form["enabled"]  # an unticked box
    return admin_client.post(f"/admin/clients/destination/{destination.pk}/change/", form)


def test_disabling_a_destination_without_a_reason_is_refused(admin_client, destination):
    reply = _disable(admin_client, destination, "")

    assert "disabled_reason" in reply.context["adminform"].form.errors
    assert Destination.objects.get(pk=destination.pk).enabled


def test_disabling_a_destination_records_who_when_and_why_and_enabling_forgets_them(admin_client, admin_user,
                                                                                   destination):
    assert _disable(admin_client, destination, "client moves to a new server").status_code == 302
    destination.refresh_from_db()
    assert (destination.enabled, destination.disabled_reason, destination.disabled_by) == (
        False, "client moves to a new server", admin_user)
    assert destination.disabled_at is not None

    admin_client.post(f"/admin/clients/destination/{destination.pk}/change/", _destination_form(destination))
    destination.refresh_from_db()
    assert (destination.enabled, destination.disabled_reason, destination.disabled_by) == (True, "", None)


def test_switching_delivery_off_everywhere_needs_a_reason(admin_client):
    reply = admin_client.post("/admin/delivery/deliveryswitch/add/", {"reason": ""})

    assert "reason" in reply.context["adminform"].form.errors
    assert not DeliverySwitch.objects.exists()


def test_the_status_screens_show_the_global_switch_at_the_top_with_who_and_why(admin_client, admin_user,
                                                                               destination, clean_redis):
    admin_client.post("/admin/delivery/deliveryswitch/add/", {"reason": "incident 42: wrong results"})

    for url in ("/admin/delivery/status/", f"/admin/delivery/status/client/{destination.client_id}/"):
        page = admin_client.get(url).content.decode()
        banner = page[page.index('id="delivery-switch"'):]
        assert banner.index("switched off everywhere") < banner.index("ScoreApp webhook")
        assert "incident 42: wrong results" in banner and f"by {admin_user.username}" in banner


def test_the_overview_says_who_switched_each_destination_off_when_and_why(admin_client, admin_user, destination,
                                                                          clean_redis):
    _disable(admin_client, destination, "client moves to a new server")
    fenced = Destination.objects.create(client=destination.client, name="ScoreApp fenced", kind="webhook",
                                        config={"url": "http://127.0.0.1:9/b"})
    admin_client.post(f"/admin/clients/destination/{fenced.pk}/change/", _destination_form(
        fenced, webhook__cred__secret=WEBHOOK_SECRET, fenced="on", fence_reason="wrong bucket, see ticket 7"))
    paused = Destination.objects.create(client=destination.client, name="ScoreApp paused", kind="webhook",
                                        config={"url": "http://127.0.0.1:9/c"})
    control.pause(paused.pk, "client deploying", by=admin_user)

    page = admin_client.get("/admin/delivery/status/").content.decode()

    for what, reason in (("disabled", "client moves to a new server"), ("fenced", "wrong bucket, see ticket 7"),
                         ("paused", "client deploying")):
        assert f"{what} by {admin_user.username} at " in page and reason in page
