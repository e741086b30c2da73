"""Who may drive delivery: one permission, Django's own `change` on destinations.

Pausing, resuming, retrying, replaying, resending and testing a destination change what is
sent to it, so they need what editing it needs. Staff with only `view` see every screen and
can do none of these.
"""

CHANGE_DESTINATION = "clients.change_destination"


def may_drive_delivery(user) -> bool:
    return user.has_perm(CHANGE_DESTINATION)
