"""The Redis destinations that fill the pull cache, so the ordinary sender publishes every
file the pull API reads (issue 5): nothing is rendered or gzipped per request.

For one Games:
  system client "pull cache" → destination "shared files"     (key prefix feed:, every definition)
                             → destination "public documents"  (key prefix pub:, fixtures and careers)
  each client with an own shape → its destination "pull cache (own shape)" (key prefix
                                  feed:{id}:{shape tag}:, its subscriptions in the client's shape)
and the split and public files of `feeds.resolvers` are added as definitions and built once.
"""

from datetime import timedelta

from django.db import transaction

from omnium import redis_keys
from omnium.clients.models import Client, Destination, Entitlement, Subscription
from omnium.clients.shapes import AS_BUILT
from omnium.clients.system_destinations import pull_redis_url_and_credentials
from omnium.feeds import debounce, record_ids
from omnium.feeds.builder import build_file, files_of
from omnium.feeds.doc_keys import FileKey
from omnium.feeds.hints import wake_builders
from omnium.feeds.models import FeedDefinition, FeedDocument
from omnium.feeds.resolvers import PULL_DEFINITIONS, SPLITS
from omnium.games.models import Athlete, Fixture, Games, MedalEvent
from omnium.pullapi.file_locations import DOC_KEY_TEMPLATE, PUBLIC_TEMPLATE, own_prefix
from omnium.routing import BULK

SYSTEM_CLIENT = "pull cache"
SHARED_DESTINATION = "shared files"
PUBLIC_DESTINATION = "public documents"
OWN_SHAPE_DESTINATION = "pull cache (own shape)"
PUBLIC_FEED_TYPES = ("fixture", "career")


def ensure_definitions(games: Games) -> list[FeedDefinition]:
    for feed_type, name in PULL_DEFINITIONS:
        FeedDefinition.objects.get_or_create(games=games, feed_type=feed_type, defaults={"name": name})
    return list(FeedDefinition.objects.filter(games=games, enabled=True).order_by("feed_type"))


def _redis_destination(client: Client, name: str, key_prefix: str) -> Destination:
    url, _ = pull_redis_url_and_credentials()  # its credentials too are read from the settings at each use
    config = {"url": url, "key_prefix": key_prefix}
    destination = Destination.objects.filter(client=client, name=name).first()
    if destination is None:
        destination = Destination(client=client, name=name, kind="redis", config=config)
    destination.kind, destination.config, destination.system = "redis", config, True
    destination.full_clean()
    destination.save()
    return destination


# The shared files are as built whatever shape the system client is given by hand; an own-shape
# destination's subscriptions follow their client's shape (blank fields: as the client).
AS_BUILT_FIELDS = {"transform": AS_BUILT.transform, "include_version": AS_BUILT.include_version,
                   "include_result_marks": AS_BUILT.include_result_marks}
CLIENTS_SHAPE_FIELDS = {"transform": "", "include_version": None, "include_result_marks": None}


def _subscribe(destination: Destination, definition: FeedDefinition, template: str, filter: str = "",
               shape_fields=AS_BUILT_FIELDS) -> Subscription:
    wanted = {"file_name_template": template, "active": True, **shape_fields}
    subscription = Subscription.objects.filter(destination=destination, definition=definition, filter=filter).first()
    if subscription is None:
        return Subscription.objects.create(destination=destination, definition=definition, filter=filter, **wanted)
    if any(getattr(subscription, field) != value for field, value in wanted.items()):
        for field, value in wanted.items():
            setattr(subscription, field, value)
        subscription.save()
    return subscription


def _own_shapes(games: Games, definitions: dict) -> dict:
    """client -> [(definition, filter)] for every entitlement of a client with its own shape."""
    wanted: dict = {}
    for entitlement in Entitlement.objects.filter(definition__games=games, active=True).select_related("client",
                                                                                                       "definition"):
        if not entitlement.client.shape.own:
            continue
        feed_types = (entitlement.definition.feed_type, *SPLITS.get(entitlement.definition.feed_type, ()))
        for feed_type in feed_types:
            if feed_type in definitions:
                filter = entitlement.filter if feed_type == entitlement.definition.feed_type else ""
                wanted.setdefault(entitlement.client, []).append((definitions[feed_type], filter))
    return wanted


@transaction.atomic
def ensure_destinations(games: Games) -> dict:
    definitions = {d.feed_type: d for d in ensure_definitions(games)}
    system, _ = Client.objects.get_or_create(name=SYSTEM_CLIENT)
    shared = _redis_destination(system, SHARED_DESTINATION, redis_keys.SHARED_FILE_PREFIX)
    public = _redis_destination(system, PUBLIC_DESTINATION, redis_keys.PUBLIC_FILE_PREFIX)
    kept = [_subscribe(shared, d, DOC_KEY_TEMPLATE).pk for d in definitions.values()]
    kept += [_subscribe(public, definitions[t], PUBLIC_TEMPLATE).pk for t in PUBLIC_FEED_TYPES]
    own = []
    for client, subscriptions in _own_shapes(games, definitions).items():
        # A new shape is a new key prefix: the destination's config change resends every file
        # there, and the keys under the old prefix are deleted (delivery.operations.key_cleanup).
        destination = _redis_destination(client, OWN_SHAPE_DESTINATION, own_prefix(client.pk, client.shape))
        own.append(destination.pk)
        kept += [_subscribe(destination, d, DOC_KEY_TEMPLATE, f, CLIENTS_SHAPE_FIELDS).pk for d, f in subscriptions]
    # Subscriptions of this Games that no longer match an entitlement stop being published.
    stale = Subscription.objects.filter(destination__name__in=[SHARED_DESTINATION, PUBLIC_DESTINATION,
                                                               OWN_SHAPE_DESTINATION],
                                        destination__kind="redis", definition__games=games, active=True)
    retired = 0
    for subscription in stale.exclude(pk__in=kept):  # one by one: retiring one deletes its Redis keys
        subscription.active = False
        subscription.save(update_fields=["active"])
        retired += 1
    return {"shared_destination": shared.pk, "public_destination": public.pk, "own_shape_destinations": own,
            "subscriptions": len(kept), "retired_subscriptions": retired}


def pull_files_of(games: Games) -> list[str]:
    """Every split and public file of the Games (filters from the saved records)."""
    days = (games.starts_on + timedelta(days=n) for n in range((games.ends_on - games.starts_on).days + 1))
    fixtures = Fixture.objects.filter(games=games).order_by("starts_at", "id").values_list("id", flat=True)
    units = MedalEvent.objects.filter(games=games).order_by("code").values_list("code", flat=True)
    athletes = Athlete.objects.filter(entry__games=games).union(
        Athlete.objects.filter(teams__games=games)).values_list("id", flat=True)
    filters = {
        "calendar_day": [d.isoformat() for d in days],
        "fixture": [record_ids.compact(f) for f in fixtures],
        "unit_standings": list(units),
        "career": sorted(record_ids.compact(a) for a in athletes),
    }
    return [str(FileKey(games.code, t, f)) for t, values in filters.items() for f in values]


def queue_missing(games: Games) -> dict:
    """Owe a first build, in the bulk lane, to each of the Games' files never built: its
    standard files first, then its split and public files. The builders make them in their
    turn, live files always first, in tasks of bounded length on any worker host; building
    them here, some 16,700 at Asian Games scale, ran past the task's time limit."""
    split_and_public = {feed_type for feed_type, _ in PULL_DEFINITIONS}
    standard = [k for k in files_of(games.code) if FileKey.parse(k).feed_type not in split_and_public]
    pull_files = pull_files_of(games)
    queued = debounce.note_first_builds(standard, BULK) + debounce.note_first_builds(pull_files, BULK)
    if queued:
        transaction.on_commit(lambda: wake_builders(BULK, 0, soon=True))
    return {"pull_files": len(pull_files), "queued_first_builds": queued}


def build_missing(games: Games, feed_types=None) -> dict:
    """Build the split and public files that have never been built (later builds follow changes)."""
    wanted = [k for k in pull_files_of(games) if feed_types is None or FileKey.parse(k).feed_type in feed_types]
    built = set(FeedDocument.objects.filter(doc_key__in=wanted).values_list("doc_key", flat=True))
    outcomes: dict[str, int] = {}
    for doc_key in wanted:
        if doc_key not in built:
            outcome = build_file(doc_key).outcome
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return {"pull_files": len(wanted), "built": outcomes}
