from django.contrib import admin

from omnium.feeds.models import FeedDefinition, FeedDocument
from omnium.read_only_admin import ReadOnlyAdmin


@admin.register(FeedDefinition)
class FeedDefinitionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "name", "feed_type", "per_noc", "enabled"]
    list_filter = ["feed_type", "enabled", "games"]
    search_fields = ["feed_type", "name", "games__code"]
    list_select_related = ["games"]


@admin.register(FeedDocument)
class FeedDocumentAdmin(ReadOnlyAdmin):
    list_display = ["doc_key", "seq", "size", "changed_at", "built_at"]
    list_filter = ["feed_type", "games"]
    search_fields = ["doc_key"]
    exclude = ["body", "content_hash", "dependencies_hash"]
    readonly_fields = ["doc_key", "definition", "games", "feed_type", "filter", "size", "seq", "changed_at", "built_at"]
