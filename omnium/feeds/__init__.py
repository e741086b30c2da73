"""Feed files: what each one is, and how a change becomes a new version.

- `models`: a file's definition, its current version, what it was built from; `definitions`:
  the files a Games starts with; `doc_keys`, `record_ids`: file names.
- `resolvers/`: every feed type, one registry (`RESOLVERS`).
- `changes`: the outbox reader (records changed → files owed a build, via `feed_dependency`).
- `debounce`: pending builds per file, due after a quiet period, never past a cap.
- `builder`: resolve → `canonical` bytes → hash → a new version only on change; announces it
  through `signals` (`file_version_saved` / `_committed`: delivery listens; feeds never
  imports it).
- `hints`, `tasks`: post-commit wake-ups and the build lanes; `build_alerts`: a file whose
  builds keep failing opens an alert (and resolves it once it builds); `stopping`: a build
  worker's warm shutdown (the build in hand ends, the rest goes to another worker).
- `admin`, `apps`; `management/commands/build_feeds`: build every file of a Games now.
"""
