"""Staff with only `view` permissions see every screen and can change nothing: no admin action
is offered to them, and every control view answers 403 and leaves the destination as it was."""

from datetime import date

import pytest
from django.contrib.auth.models import Permission
from django.test import Client as Browser

from omnium.clients.models import ApiKey, Client, Destination
from omnium.delivery.models import DeliveryState, SenderState

pytestmark = pytest.mark.django_db

ACTIONS_OF_CHANGELISTS = {
    "/admin/clients/destination/": ["test_connection", "pause", "resume", "retry_now", "replay_dead_letters"],
    "/admin/delivery/deliverystate/": ["resend"],
    "/admin/clients/client/": ["switch_on"],
    "/admin/clients/apikey/": ["revoke"],
    "/admin/games/statjob/": ["run_again"],
}


@pytest.fixture
def viewer(django_user_model):
    """A staff member with every `view_…` permission and nothing else."""
    user = django_user_model.objects.create_user("viewer", password="x", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    browser = Browser()
    browser.force_login(user)
    return browser


@pytest.fixture
def destination():
    client = Client.objects.create(name="NDTV")
    return Destination.objects.create(client=client, name="NDTV webhook", kind="webhook",
                                      config={"url": "http://127.0.0.1:9/hook"})


def _offered_actions(browser, url: str) -> set[str]:
    reply = browser.get(url)
    assert reply.status_code == 200
    action_form = reply.context["action_form"]
    return {name for name, _ in action_form.fields["action"].choices} if action_form else set()


@pytest.mark.parametrize("url", list(ACTIONS_OF_CHANGELISTS))
def test_a_view_only_user_is_offered_no_action(viewer, url):
    assert not _offered_actions(viewer, url) & set(ACTIONS_OF_CHANGELISTS[url])


@pytest.mark.parametrize("url", list(ACTIONS_OF_CHANGELISTS))
def test_an_operator_is_offered_every_action(admin_client, url):
    assert set(ACTIONS_OF_CHANGELISTS[url]) <= _offered_actions(admin_client, url)


def test_a_posted_pause_action_from_a_view_only_user_pauses_nothing(viewer, destination, clean_redis):
    viewer.post("/admin/clients/destination/", {"action": "pause", "_selected_action": [destination.pk]})

    assert not SenderState.objects.filter(pk=destination.pk, paused=True).exists()


def test_a_posted_resend_action_from_a_view_only_user_resends_nothing(viewer, destination, clean_redis):
    subscription = destination.subscriptions.create(definition=_a_definition())
    state = DeliveryState.objects.create(subscription=subscription, destination=destination, doc_key="ag1/medals")

    viewer.post("/admin/delivery/deliverystate/", {"action": "resend", "_selected_action": [state.pk]})

    state.refresh_from_db()
    assert state.force_resend is False


def test_a_posted_revoke_action_from_a_view_only_user_revokes_nothing(viewer, destination):
    key, _ = ApiKey.issue(destination.client, "production")

    viewer.post("/admin/clients/apikey/", {"action": "revoke", "_selected_action": [key.pk]})

    key.refresh_from_db()
    assert key.active


@pytest.mark.parametrize("action", ["pause", "resume", "retry", "replay"])
def test_every_status_screen_control_is_forbidden_to_a_view_only_user(viewer, destination, action, clean_redis):
    reply = viewer.post(f"/admin/delivery/status/destination/{destination.pk}/control/",
                        {"action": action, "reason": "looking around"})

    assert reply.status_code == 403
    assert not SenderState.objects.filter(pk=destination.pk, paused=True).exists()


def test_an_operator_may_pause_from_the_status_screen(admin_client, destination, clean_redis):
    admin_client.post(f"/admin/delivery/status/destination/{destination.pk}/control/",
                      {"action": "pause", "reason": "client deploying"})

    assert SenderState.objects.get(pk=destination.pk).paused


def test_testing_a_connection_is_forbidden_to_a_view_only_user(viewer, destination):
    page = viewer.get(f"/admin/clients/destination/{destination.pk}/change/").content.decode()
    reply = viewer.post(f"/admin/clients/destination/{destination.pk}/test-connection/")

    assert 'id="test-connection"' not in page
    assert reply.status_code == 403


def test_fetching_a_host_key_is_forbidden_to_a_view_only_user(viewer):
    reply = viewer.post("/admin/clients/destination/fetch-host-key/", {"host": "127.0.0.1", "port": "9"})

    assert reply.status_code == 403


def test_a_view_only_user_sees_the_status_screens_without_their_buttons(viewer, destination, clean_redis):
    overview = viewer.get("/admin/delivery/status/")
    client_page = viewer.get(f"/admin/delivery/status/client/{destination.client_id}/")

    assert overview.status_code == client_page.status_code == 200
    assert "NDTV webhook" in client_page.content.decode()
    assert 'value="pause"' not in client_page.content.decode()


def test_a_view_only_user_cannot_switch_delivery_off(viewer):
    reply = viewer.post("/admin/delivery/deliveryswitch/add/", {"reason": "curious"})

    assert reply.status_code == 403


def _a_definition():
    from omnium.feeds.models import FeedDefinition
    from omnium.games.models import Games

    games = Games.objects.create(code="ag1", name="Asian Games", starts_on=date(2026, 9, 19),
                                 ends_on=date(2026, 10, 4))
    return FeedDefinition.objects.create(games=games, feed_type="medals", name="medals")
