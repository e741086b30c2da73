"""The client's own window: a portal where a client sees, proves and fixes its own deliveries.

Separate from the staff admin (its own URLs under /portal/, its own templates and styles),
served by the admin's processes. A client's people open it with a link that staff make in the
admin (`admin`, which also lists what clients did); the link is a secret kept only as its
digest, and it expires and can be withdrawn.

- `models`: `PortalLink`, and `PortalAction`, the portal's audit log;
- `links`: making a link, and telling whether a request may see a client's portal;
- `views`: the pages and their URLs, each scoped to the one client of the link that opened the
  session;
- `apps`: Django's entry point.
"""
