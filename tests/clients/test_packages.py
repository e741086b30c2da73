"""A package subscribes a destination, or entitles a client, to a bundle of feeds in one step."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client as Browser

from omnium.clients import packages
from omnium.clients.models import Client, Entitlement, Package, Subscription
from omnium.delivery.engine import sender
from omnium.feeds.models import FeedDefinition
from tests.delivery.fixtures import webhook_settings


def make_package(games, *feed_types, name="Medals + Results") -> Package:
    package = Package.objects.create(name=name)
    package.definitions.set(FeedDefinition.objects.filter(games=games, feed_type__in=feed_types))
    return package


@pytest.fixture
def destination(small_games, subscribe, receiver):
    return subscribe(small_games, webhook_settings(receiver.url), feed_types=(), client="bravo")


def test_applying_a_package_pushes_each_of_its_files_and_applying_it_again_adds_nothing(
        small_games, destination, receiver):
    package = make_package(small_games, "medals", "results")

    first = packages.subscribe(package, destination)
    again = packages.subscribe(package, destination)

    assert (first.created, again.created, again.already) == (2, 0, 2)
    assert sorted(destination.subscriptions.values_list("definition__feed_type", flat=True)) == ["medals", "results"]
    assert sender.drain(destination.pk) == sender.Outcome.DRAINED
    assert sorted(d.headers["omnium-path"] for d in receiver.deliveries) == [
        f"{small_games.code}/medals.json", f"{small_games.code}/results.json"]


def test_a_changed_package_reaches_nobody_until_it_is_applied_again(small_games, destination):
    package = make_package(small_games, "medals", "results")
    packages.subscribe(package, destination)

    package.definitions.add(FeedDefinition.objects.get(games=small_games, feed_type="calendar"))
    package.definitions.remove(FeedDefinition.objects.get(games=small_games, feed_type="medals"))
    assert destination.subscriptions.count() == 2, "no feed the client never bought, none silently dropped"

    applied = packages.subscribe(package, destination)
    assert (applied.created, applied.already) == (1, 1)
    assert destination.subscriptions.filter(active=True).count() == 3


def test_applying_a_package_switches_a_switched_off_file_on_again_and_keeps_its_settings(small_games, destination):
    package = make_package(small_games, "medals")
    packages.subscribe(package, destination)
    subscription = Subscription.objects.get(destination=destination)
    subscription.active, subscription.transform = False, "xml"
    subscription.save()

    applied = packages.subscribe(package, destination)

    subscription.refresh_from_db()
    assert applied.switched_on == 1 and subscription.active and subscription.transform == "xml"


def test_the_admin_applies_a_package_to_a_destination_and_a_client_when_it_is_saved(
        small_games, destination, admin_client):
    pull_client = Client.objects.create(name="charlie")
    feeds = FeedDefinition.objects.filter(games=small_games, feed_type__in=["medals", "results"])

    response = admin_client.post("/admin/clients/package/add/", {
        "name": "Medals + Results", "description": "", "definitions": [d.pk for d in feeds],
        "subscribe_destinations": [destination.pk], "entitle_clients": [pull_client.pk],
    }, follow=True)

    assert response.status_code == 200
    assert destination.subscriptions.count() == 2
    assert Entitlement.objects.filter(client=pull_client).count() == 2
    shown = [str(m) for m in response.context["messages"]]
    assert any("subscriptions 2 new" in m for m in shown) and any("entitlements 2 new" in m for m in shown)


@pytest.mark.parametrize("may_subscribe, may_entitle", [(False, False), (True, False), (False, True)])
def test_applying_a_package_needs_the_rights_to_subscribe_and_to_entitle_not_only_change_package(
        small_games, destination, django_user_model, may_subscribe, may_entitle):
    package = make_package(small_games, "medals")
    pull_client = Client.objects.create(name="charlie")
    staff = django_user_model.objects.create_user("packager", password="x", is_staff=True)
    codenames = ["view_package", "change_package"]
    codenames += ["add_subscription", "change_subscription"] if may_subscribe else []
    codenames += ["add_entitlement", "change_entitlement"] if may_entitle else []
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="clients", codename__in=codenames))
    browser = Browser()
    browser.force_login(staff)

    page = browser.get(f"/admin/clients/package/{package.pk}/change/")
    offered = set(page.context["adminform"].form.fields)
    saved = browser.post(f"/admin/clients/package/{package.pk}/change/", {
        "name": package.name, "description": "", "definitions": list(package.definitions.values_list("pk", flat=True)),
        "subscribe_destinations": [destination.pk], "entitle_clients": [pull_client.pk]})

    assert saved.status_code == 302
    assert ("subscribe_destinations" in offered, "entitle_clients" in offered) == (may_subscribe, may_entitle)
    assert destination.subscriptions.exists() == may_subscribe
    assert Entitlement.objects.filter(client=pull_client).exists() == may_entitle
