"""What a feed file is: its definition, its current version, what it was built from."""

from django.core.exceptions import ValidationError
from django.db import models

from omnium.games.models import ClockTimestamp, Games


class PgSnapshotField(models.Field):
    """A PostgreSQL pg_snapshot, kept as text: which transactions a build could see."""

    def db_type(self, connection):
        return "pg_snapshot"

    def from_db_value(self, value, expression, connection):
        return None if value is None else str(value)


def validate_feed_type(value: str) -> None:
    from omnium.feeds.resolvers import RESOLVERS

    if value not in RESOLVERS:
        raise ValidationError(f"unknown feed type {value!r}; known: {', '.join(sorted(RESOLVERS))}")


class FeedDefinition(models.Model):
    """One kind of file of one Games. Data, not code: adding one needs no migration.

    A definition with `per_noc` makes one file per participating NOC (filter = NOC code).
    """

    games = models.ForeignKey(Games, on_delete=models.CASCADE, related_name="feed_definitions")
    feed_type = models.CharField(max_length=30, validators=[validate_feed_type])
    name = models.CharField(max_length=100)
    per_noc = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["games", "feed_type"], name="one_definition_per_type"),
        ]

    def __str__(self):
        return f"{self.games.code} {self.feed_type}"


class FeedDocument(models.Model):
    """The current version of one feed file. `seq` moves only when `content_hash` changes."""

    doc_key = models.TextField(primary_key=True)
    definition = models.ForeignKey(FeedDefinition, on_delete=models.CASCADE, related_name="documents")
    games = models.ForeignKey(Games, on_delete=models.CASCADE, related_name="feed_documents")
    feed_type = models.CharField(max_length=30)
    filter = models.CharField(max_length=30, blank=True)
    body = models.BinaryField()
    size = models.PositiveIntegerField()
    content_hash = models.BinaryField(max_length=32)
    dependencies_hash = models.BinaryField(max_length=32)
    seq = models.BigIntegerField()
    changed_at = models.DateTimeField()
    built_at = models.DateTimeField()

    class Meta:
        # The pull API finds a public document by its record id alone (/v1/fixtures/{id}):
        # without this, every unknown id scanned the whole table.
        indexes = [models.Index(fields=["feed_type", "filter"], name="feed_document_by_record")]

    def __str__(self):
        return f"{self.doc_key} v{self.seq}"


class FeedVersion(models.Model):
    """One committed version of a file (no body): the history behind versions and latency."""

    doc_key = models.TextField()
    seq = models.BigIntegerField(unique=True)
    content_hash = models.BinaryField(max_length=32)
    size = models.PositiveIntegerField()
    changed_at = models.DateTimeField()
    committed_at = models.DateTimeField(db_default=ClockTimestamp())
    snapshot = PgSnapshotField()

    class Meta:
        indexes = [models.Index(fields=["doc_key", "seq"])]


class FeedDependency(models.Model):
    """File `doc_key` was built from record (record_kind, record_id). Replaced on every build."""

    pk = models.CompositePrimaryKey("record_kind", "record_id", "doc_key")
    record_kind = models.CharField(max_length=20)
    record_id = models.UUIDField()
    doc_key = models.TextField()

    class Meta:
        db_table = "feed_dependency"
        indexes = [models.Index(fields=["doc_key"], name="feed_dependency_doc_key")]


class PendingBuild(models.Model):
    """A file owed a rebuild: due at once if it was quiet (the leading edge), otherwise
    debounced, due 1 s after its last change and no later than 2 s after its first.

    `generation` counts the changes folded in; a build removes the row only if no change
    arrived while it ran. A claim with an expired `claimed_until` belonged to a dead worker.
    """

    doc_key = models.TextField(primary_key=True)
    lane = models.CharField(max_length=10)
    first_change_at = models.DateTimeField()
    last_change_at = models.DateTimeField()
    due_at = models.DateTimeField()
    generation = models.PositiveIntegerField(default=1)
    claim_token = models.UUIDField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    # Written by raw SQL (debounce.py), so their defaults are the database's.
    failed_builds = models.PositiveIntegerField(db_default=0)  # in a row; 0 again once it builds
    last_error = models.TextField(blank=True, db_default="")

    class Meta:
        indexes = [models.Index(fields=["lane", "due_at"], name="pending_build_due")]
