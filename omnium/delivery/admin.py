from django.contrib import admin, messages

from omnium.delivery import control
from omnium.delivery.models import DeliveryAttempt, DeliveryState, DeliverySwitch


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(DeliveryState)
class DeliveryStateAdmin(ReadOnly):
    list_display = ["doc_key", "destination", "wanted_seq", "sent_seq", "sent_at", "age_ms", "sent_bytes",
                    "receipt", "dead_lettered_at", "last_error"]
    list_filter = [("dead_lettered_at", admin.EmptyFieldListFilter), "destination__client", "destination"]
    search_fields = ["doc_key", "destination__name", "receipt"]
    list_select_related = ["destination__client"]
    exclude = ["sent_hash"]
    actions = ["resend"]

    @admin.action(description="Resend / replay the selected files now")
    def resend(self, request, queryset):
        resent = control.resend(queryset.values_list("pk", flat=True))
        self.message_user(request, f"{resent} file(s) will be resent.", messages.SUCCESS)


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
