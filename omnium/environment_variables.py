"""The environment the settings read, and the refusal of an OMNIUM_ variable nothing reads.

A misspelt variable (OMNIUM_BUILD_CLAIM_TTL_S for OMNIUM_CLAIM_TTL_S) would otherwise be
ignored in silence while the operator believes it applies; so the settings remember every name
they read, and a process whose environment holds another OMNIUM_ name stops at start, naming it
and the closest name that exists.
"""

import difflib
import os

import environ
from django.core.exceptions import ImproperlyConfigured

PREFIX = "OMNIUM_"


class ReadingEnv(environ.Env):
    """django-environ's Env, remembering the name of every variable read through it."""

    def __init__(self, **scheme):
        super().__init__(**scheme)
        self.names_read: set[str] = set()

    def get_value(self, var, cast=None, default=environ.Env.NOTSET, parse_default=False):
        self.names_read.add(var)
        return super().get_value(var, cast=cast, default=default, parse_default=parse_default)


def refuse_unread(names_read: set[str], environment=os.environ) -> None:
    """Stop the process if `environment` sets an OMNIUM_ variable that is not in `names_read`."""
    known = sorted(name for name in names_read if name.startswith(PREFIX))
    unread = sorted(name for name in environment if name.startswith(PREFIX) and name not in names_read)
    if unread:
        raise ImproperlyConfigured("; ".join(_explain(name, known) for name in unread))


def _explain(name: str, known: list[str]) -> str:
    closest = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f" (did you mean {closest[0]}?)" if closest else " (docs/configuration.md lists every setting)"
    return f"{name} is set, but no setting of Omnium reads it{hint}"
