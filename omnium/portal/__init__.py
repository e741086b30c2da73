"""The client's own window: a portal where a client sees, proves and fixes its own deliveries.

Separate from the staff admin (its own URLs under /portal/, its own templates and styles),
served by the admin's processes. A client's people open it with a link that staff make in the
admin (`admin`, which also lists what clients did); the link is a secret kept only as its
digest, and it expires and can be withdrawn. A person who came with a link may make a sign-in
of their own for that client.

- `models`: `PortalLink`, `PortalAccount` (a sign-in of the client's own people) and
  `PortalAction`, the portal's audit log;
- `links`: making a link, opening it, and telling whether it still works;
- `accounts`: signing in with an account, and making one from a link's session;
- `access`: who the visitor is and for which client, the check every page makes, and the
  audit record of what they did;
- `views`: the reading pages (deliveries, freshness, checking a file) and every portal URL;
- `actions`: what a client does to its destinations (pause, resume, resend, rotate a webhook
  secret, test the connection, download a file as pushed);
- `pull_keys`: issuing a pull key and ending older ones;
- `apps`: Django's entry point.
"""
