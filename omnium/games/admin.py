from django.contrib import admin, messages

from omnium.games import statjobs
from omnium.games.models import Fixture, Games, MedalEvent, StatJob
from omnium.read_only_admin import ReadOnlyAdmin


class ThroughWorkflowOnly(ReadOnlyAdmin):
    """Games records are shown, not edited, here. They change only through the workflow
    commands (omnium.games.workflow), which validate the change and write, in the same
    transaction, the outbox row that rebuilds every file showing the record. An admin save
    did neither: the files kept the old data until something else touched them."""

    deletable = False


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
class StatJobAdmin(ReadOnlyAdmin):
    """Stat jobs are written and run by the system; an edit here could claim or finish one
    behind its runner's back. What staff may do is run failed jobs again."""

    deletable = False

    list_display = ["stat", "games", "lane", "state", "attempts", "fixture", "last_error", "created_at"]
    list_filter = ["state", "lane", "stat"]
    actions = ["run_again"]

    def has_run_again_permission(self, request):
        return request.user.has_perm("games.change_statjob")

    @admin.action(description="Run the selected failed jobs again", permissions=["run_again"])
    def run_again(self, request, queryset):
        selected = list(queryset.values_list("pk", flat=True))
        restarted = statjobs.run_again(selected)
        skipped = len(selected) - restarted
        message = f"{restarted} failed job(s) will run again."
        if skipped:
            message += f" {skipped} selected job(s) had not failed and were left as they were."
        self.message_user(request, message, messages.SUCCESS if restarted else messages.WARNING)
