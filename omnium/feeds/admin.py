from django.contrib import admin

from omnium.feeds.models import FeedDefinition, FeedDocument, PendingBuild
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


class FailingFilter(admin.SimpleListFilter):
    title = "builds"
    parameter_name = "failing"

    def lookups(self, request, model_admin):
        return [("yes", "cannot be built (failing)")]

    def queryset(self, request, queryset):
        return queryset.filter(failed_builds__gt=0) if self.value() == "yes" else queryset


@admin.register(PendingBuild)
class PendingBuildAdmin(ReadOnlyAdmin):
    """Files owed a build; with the filter, those whose builds keep failing and why."""

    deletable = False  # a deleted row would be a change never built
    list_display = ["doc_key", "lane", "first_change_at", "due_at", "failed_builds", "last_error"]
    list_filter = [FailingFilter, "lane"]
    search_fields = ["doc_key"]
    ordering = ["-failed_builds", "first_change_at"]
