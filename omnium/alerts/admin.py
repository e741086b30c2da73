from django.contrib import admin

from omnium.alerts.models import Alert


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = ["kind", "subject", "opened_at", "resolved_at", "message"]
    list_filter = ["kind", "resolved_at"]
    search_fields = ["subject", "message"]
