"""Omnium's own settings, read at call time so that override_settings works in tests."""

from django.conf import settings


def omnium_setting(name: str):
    """The value of OMNIUM[name]; a KeyError names a setting that does not exist."""
    return settings.OMNIUM[name]
