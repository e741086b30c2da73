"""Reports made from the record for people outside operations: clients, account managers.

- `freshness`: per client and day, how fresh its files arrived against the promise (95 % of
  changes at the client within 10 s), summed from the proofs of delivery; `models` keeps the
  days (`FreshnessDay`), `views` shows them in the admin with a chart and as CSV, `tasks` sums
  them every hour and prunes old days (beat), `apps` is Django's entry point.
"""
