"""A settings change reaches the client at once: the current version is sent again, with proof."""

from omnium.clients.models import Subscription
from omnium.delivery.engine import sender
from omnium.delivery.models import DeliveryAttempt, DeliveryState, SenderState
from omnium.feeds.models import FeedDocument
from tests.delivery.fixtures import webhook_settings


def calendar(games) -> FeedDocument:
    return FeedDocument.objects.get(doc_key=f"{games.code}/calendar")


def test_a_new_transform_resends_the_current_version_in_the_new_shape(small_games, subscribe, receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    assert sender.drain(destination.pk) == sender.Outcome.DRAINED
    assert receiver.deliveries[-1].body.lstrip().startswith(b"{")

    subscription = Subscription.objects.get(destination=destination)
    subscription.transform, subscription.file_name_template = "xml", "{games}/renamed-{name}.{ext}"
    subscription.full_clean()
    subscription.save()

    assert DeliveryState.objects.get(destination=destination).force_resend, "owed again, without a new version"
    assert sender.drain(destination.pk) == sender.Outcome.DRAINED
    resent = receiver.deliveries[-1]
    assert resent.body.lstrip().startswith(b"<")
    assert resent.headers["omnium-path"] == f"{small_games.code}/renamed-calendar.xml"
    proofs = DeliveryAttempt.objects.filter(destination=destination, ok=True).values_list("seq", flat=True)
    assert list(proofs) == [calendar(small_games).seq] * 2, "the same version, proved twice"


def test_an_unchanged_save_resends_nothing(small_games, subscribe, receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    sender.drain(destination.pk)

    Subscription.objects.get(destination=destination).save()
    destination.save()

    assert not DeliveryState.objects.get(destination=destination).owed


def test_a_fixed_destination_config_is_tried_at_once_despite_its_back_off(small_games, subscribe, receiver):
    """The admin's fix (a corrected URL, or the SFTP host key a person checked) resumes sending
    by itself: no five-minute wait, no replay."""
    destination = subscribe(small_games, webhook_settings(receiver.url.replace("/feeds", "/gone")))
    receiver.replies.append((404, {}))
    assert sender.drain(destination.pk) == sender.Outcome.FAILED
    assert sender.drain(destination.pk) == sender.Outcome.IDLE, "backing off at the slow pace"

    _, destination.config, secret = webhook_settings(receiver.url)
    destination.set_credentials(secret)  # typed again with the new URL
    destination.full_clean()
    destination.save()

    assert SenderState.objects.get(pk=destination.pk).retry_at is None
    assert sender.drain(destination.pk) == sender.Outcome.DRAINED
    assert receiver.deliveries[-1].path == "/feeds"
    assert DeliveryState.objects.get(destination=destination).sent_seq == calendar(small_games).seq


def test_a_new_client_shape_resends_only_the_subscriptions_that_follow_it(small_games, subscribe, receiver):
    following = subscribe(small_games, webhook_settings(receiver.url), client="bravo")
    own_transform = subscribe(small_games, webhook_settings(receiver.url), client="bravo", transform="json")
    for destination in (following, own_transform):
        assert sender.drain(destination.pk) == sender.Outcome.DRAINED

    client = following.client
    client.transform = "xml"
    client.save()

    assert DeliveryState.objects.get(destination=following).force_resend
    assert not DeliveryState.objects.get(destination=own_transform).owed, "its own transform is unchanged"
    assert sender.drain(following.pk) == sender.Outcome.DRAINED
    assert receiver.deliveries[-1].body.lstrip().startswith(b"<")
