"""Feed files: what each one is, and how a change becomes a new version.

- `resolvers/`: every feed type, one registry (`RESOLVERS`); `definitions`: a Games' files.
- `changes`: the outbox reader (records changed → files owed a build, via `feed_dependency`).
- `debounce`: pending builds per file, due after a quiet period, never past a cap.
- `builder`: resolve → `canonical` bytes → hash → a new version only on change (`bodies`
  moves the bytes); announces it with `signals.file_version_saved` / `_committed`.
- `hints`, `tasks`: wake-ups and the build lanes; `doc_keys`, `record_ids`: file names.
"""
