from django.contrib import admin, messages
from django.db.models import Count, F, Q
from django.urls import reverse
from django.utils.html import format_html

from omnium.clients.admin import DestinationAdmin
from omnium.clients.models import Destination
from omnium.delivery import control
from omnium.delivery.models import DeliveryAttempt, DeliveryState, DeliverySwitch
from omnium.read_only_admin import ReadOnlyAdmin


@admin.register(Destination)
class DestinationDeliveryAdmin(DestinationAdmin):
    """A destination's settings (from `clients`) with the actions that drive its delivery."""

    list_display = [*DestinationAdmin.list_display, "files_owed", "status_link"]
    actions = ["pause", "resume", "retry_now", "replay_dead_letters"]

    def get_queryset(self, request):
        owed = Q(states__wanted_seq__gt=F("states__sent_seq")) | Q(states__force_resend=True)
        return super().get_queryset(request).annotate(owed_total=Count("states", filter=owed))

    @admin.display(description="files owed", ordering="owed_total")
    def files_owed(self, destination):
        return destination.owed_total

    @admin.display(description="status")
    def status_link(self, destination):
        url = reverse("delivery-client-status", args=[destination.client_id])
        return format_html('<a href="{}#destination-{}">status</a>', url, destination.pk)

    @admin.action(description="Pause the selected destinations")
    def pause(self, request, queryset):
        for destination in queryset:
            control.pause(destination.pk, f"paused from the destination list by {request.user}", by=request.user)
        self.message_user(request, f"{queryset.count()} destination(s) paused.", messages.SUCCESS)

    @admin.action(description="Resume the selected destinations")
    def resume(self, request, queryset):
        for destination in queryset:
            control.resume(destination.pk, by=request.user)
        self.message_user(request, f"{queryset.count()} destination(s) resumed.", messages.SUCCESS)

    @admin.action(description="Retry the selected destinations now")
    def retry_now(self, request, queryset):
        for destination in queryset:
            control.retry_now(destination.pk)
        self.message_user(request, f"{queryset.count()} destination(s) retrying now.", messages.SUCCESS)

    @admin.action(description="Replay all dead letters of the selected destinations")
    def replay_dead_letters(self, request, queryset):
        replayed = sum(control.replay_dead_letters(destination.pk) for destination in queryset)
        self.message_user(request, f"{replayed} dead letter(s) replayed.", messages.SUCCESS)


@admin.register(DeliveryState)
class DeliveryStateAdmin(ReadOnlyAdmin):
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
class DeliveryAttemptAdmin(ReadOnlyAdmin):
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
