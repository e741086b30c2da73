"""Who did what to a client's destinations and entitlements, beyond editing their forms: in the
admin's history (Django's LogEntry, in PostgreSQL, on each object's History page), so a pause,
a resend or a package applied can be traced to a person long after the screens forget it."""

from django.contrib.admin.models import CHANGE, LogEntry


def record(user, objects, message: str) -> None:
    """`message` in the history of each of `objects`, as done by `user` (nothing without one:
    the pipeline's own actions are in its logs and health events)."""
    objects = list(objects)
    if user is None or not objects:
        return
    LogEntry.objects.log_actions(user.pk, objects, CHANGE, change_message=message)
