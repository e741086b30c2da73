from django.contrib import admin

from omnium.games.models import Fixture, Games, MedalEvent, StatJob


@admin.register(Games)
class GamesAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "starts_on", "ends_on"]
    search_fields = ["code", "name"]


@admin.register(MedalEvent)
class MedalEventAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "games", "is_team"]
    list_filter = ["games", "is_team", "gender"]
    search_fields = ["code", "name"]


@admin.register(Fixture)
class FixtureAdmin(admin.ModelAdmin):
    list_display = ["__str__", "starts_at", "venue", "status", "result_status"]
    list_filter = ["games", "status", "result_status"]
    search_fields = ["event__name", "phase", "venue"]
    list_select_related = ["event"]


@admin.register(StatJob)
class StatJobAdmin(admin.ModelAdmin):
    list_display = ["stat", "games", "lane", "state", "attempts", "fixture", "last_error", "created_at"]
    list_filter = ["state", "lane", "stat"]
