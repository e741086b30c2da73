"""The migration to one shape per client chooses the shape that changes the fewest files."""

import importlib

migration = importlib.import_module("omnium.clients.migrations.0003_one_shape_per_client")

XML, LEGACY, AS_BUILT = ("xml", False, True), ("legacy", True, True), ("json", False, True)


def test_the_shape_most_entitlements_had_wins_over_the_subscriptions():
    assert migration.chosen_shape([XML, LEGACY, XML], [LEGACY, LEGACY, LEGACY]) == XML


def test_a_tie_goes_to_the_earliest_entitlement():
    assert migration.chosen_shape([LEGACY, XML, XML, LEGACY], []) == LEGACY


def test_without_entitlements_the_subscriptions_decide_and_without_either_it_is_as_built():
    assert migration.chosen_shape([], [AS_BUILT, XML, XML]) == XML
    assert migration.chosen_shape([], []) == AS_BUILT
