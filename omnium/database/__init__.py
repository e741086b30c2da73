"""PostgreSQL helpers every part uses, below all of them (they import no other package of ours).

- `claim_renewal`: claims this process holds (leases, build and stat job claims), renewed by a
  thread while the process lives, so a dead holder's claims expire in seconds.
- `server_binding`: a cursor that binds parameters on the server, for file bodies and for the
  hot statements prepared once per connection.
- `fast_timestamps`: timestamptz columns read by psycopg's C loader instead of Django's.
"""
