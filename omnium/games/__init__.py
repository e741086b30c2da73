"""The saved records of a Games, and the only ways they change.

- `models`: Games, sports, medal events, entries, fixtures, competitors, medals, the outbox.
- `workflow`: the commands (record_score, finish_fixture, award_medals, …); each validates,
  saves and writes its outbox row (`outbox`) in one transaction.
- `statjobs`, `stats`, `tasks`: durable stat jobs (the medal standings) on their lanes.
- `signals`: `changes_committed`, the post-commit hint that `feeds` listens to.
- `admin`: the records shown read-only; failed stat jobs run again.
"""
