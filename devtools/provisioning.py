"""Creating a client's destination with its subscriptions in one call, validated as the admin
would validate it. Used by the demo, the benchmarks and the tests."""

from django.db import transaction

from omnium.clients.models import Client, Destination, Subscription
from omnium.feeds.models import FeedDefinition


@transaction.atomic
def provision_destination(client: str, name: str, settings: tuple[str, dict, dict], games, feed_types,
                          fast_retries: int = 5, **subscription) -> Destination:
    """A destination `name` of `client` (created if new), subscribed to `feed_types` of `games`.

    `settings` is (kind, config, credentials); `subscription` holds Subscription fields
    (transform, file_name_template, filter, include_version, schedule_seconds…) for every
    feed type; an item of `feed_types` may also be (feed_type, {its own fields}).
    """
    kind, config, credentials = settings
    owner, _ = Client.objects.get_or_create(name=client)
    destination = Destination(client=owner, name=name, kind=kind, config=config, fast_retries=fast_retries)
    destination.set_credentials(credentials)
    destination.full_clean()
    destination.save()
    for item in feed_types:
        feed_type, own = (item, {}) if isinstance(item, str) else item
        definition = FeedDefinition.objects.get(games=games, feed_type=feed_type)
        row = Subscription(destination=destination, definition=definition, **{**subscription, **own})
        row.full_clean()
        row.save()
    return destination
