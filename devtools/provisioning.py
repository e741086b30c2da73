"""Creating a client's destination with its subscriptions in one call, validated as the admin
would validate it. Used by the demo, the benchmarks and the tests."""

from django.db import transaction

from omnium.clients.models import Client, Destination, Subscription
from omnium.delivery import fanout
from omnium.delivery.worker import queues
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


@transaction.atomic
def provision_destinations(client: str, settings_by_name: dict[str, tuple[str, dict, dict]], games, feed_types,
                           fast_retries: int = 5) -> list[Destination]:
    """Many destinations of one client at once, each subscribed to `feed_types` of `games`.

    Validated as `provision_destination` validates one, but written with one INSERT per table,
    one statement for their owed files, one batch of kicks and one broadcast of their queues,
    not a round of each per destination (`settings_by_name`: {name: (kind, config, credentials)})."""
    owner, _ = Client.objects.get_or_create(name=client)
    made = [_validated_destination(owner, name, settings, fast_retries) for name, settings in settings_by_name.items()]
    Destination.objects.bulk_create(made)
    definitions = [FeedDefinition.objects.get(games=games, feed_type=feed_type) for feed_type in feed_types]
    subscriptions = [Subscription(destination=destination, definition=definition)
                     for destination in made for definition in definitions]
    for subscription in subscriptions:
        subscription.full_clean(exclude=["destination", "definition"], validate_constraints=False)
    Subscription.objects.bulk_create(subscriptions)
    fanout.owe_current_files_of([subscription.pk for subscription in subscriptions])
    ids = [destination.pk for destination in made]
    transaction.on_commit(lambda: queues.announce(ids))
    return made


def _validated_destination(owner: Client, name: str, settings: tuple[str, dict, dict], fast_retries: int) -> Destination:
    kind, config, credentials = settings
    destination = Destination(client=owner, name=name, kind=kind, config=config, fast_retries=fast_retries)
    destination.set_credentials(credentials)
    # The client (just read), the foreign keys of the subscriptions (made here) and the unique
    # name per client (the INSERT's constraint) are not checked row by row: each check is a
    # query, and for 300 destinations those 900 queries were 9 of the 16 s.
    destination.full_clean(exclude=["client"], validate_constraints=False)
    return destination
