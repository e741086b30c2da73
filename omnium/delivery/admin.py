from django.contrib import admin, messages

from omnium.delivery.models import DeliveryAttempt, DeliveryState, DeliverySwitch
from omnium.delivery.queues import kick


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(DeliveryState)
class DeliveryStateAdmin(ReadOnly):
    list_display = ["doc_key", "destination", "wanted_seq", "sent_seq", "sent_at", "age_ms", "sent_bytes",
                    "receipt", "last_error"]
    list_filter = ["destination__client", "destination"]
    search_fields = ["doc_key", "destination__name", "receipt"]
    list_select_related = ["destination__client"]
    exclude = ["sent_hash"]
    actions = ["resend"]

    @admin.action(description="Resend the selected files now")
    def resend(self, request, queryset):
        updated = queryset.update(force_resend=True)
        for destination_id in set(queryset.values_list("destination_id", flat=True)):
            kick(destination_id)
        self.message_user(request, f"{updated} file(s) will be resent.", messages.SUCCESS)


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(ReadOnly):
    list_display = ["started_at", "destination", "doc_key", "seq", "ok", "duration_ms", "bytes", "error_class",
                    "receipt"]
    list_filter = ["ok", "permanent", "destination"]
    search_fields = ["doc_key", "error", "receipt"]
    list_select_related = ["destination__client"]


@admin.register(DeliverySwitch)
class DeliverySwitchAdmin(admin.ModelAdmin):
    list_display = ["enabled", "reason", "changed_by", "changed_at"]
    readonly_fields = ["changed_by", "changed_at"]

    def save_model(self, request, switch, form, change):
        switch.pk, switch.changed_by = 1, request.user
        super().save_model(request, switch, form, change)
