from django.contrib import admin

from omnium.games.models import Fixture, Games, MedalEvent, StatJob


class ThroughWorkflowOnly(admin.ModelAdmin):
    """Games records are shown, not edited, here. They change only through the workflow
    commands (omnium.games.workflow), which validate the change and write, in the same
    transaction, the outbox row that rebuilds every file showing the record. An admin save
    did neither: the files kept the old data until something else touched them."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Games)
class GamesAdmin(ThroughWorkflowOnly):
    list_display = ["code", "name", "starts_on", "ends_on"]
    search_fields = ["code", "name"]


@admin.register(MedalEvent)
class MedalEventAdmin(ThroughWorkflowOnly):
    list_display = ["code", "name", "games", "is_team"]
    list_filter = ["games", "is_team", "gender"]
    search_fields = ["code", "name"]


@admin.register(Fixture)
class FixtureAdmin(ThroughWorkflowOnly):
    list_display = ["__str__", "starts_at", "venue", "status", "result_status"]
    list_filter = ["games", "status", "result_status"]
    search_fields = ["event__name", "phase", "venue"]
    list_select_related = ["event"]


@admin.register(StatJob)
class StatJobAdmin(admin.ModelAdmin):
    list_display = ["stat", "games", "lane", "state", "attempts", "fixture", "last_error", "created_at"]
    list_filter = ["state", "lane", "stat"]
