from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, Q
from django.shortcuts import get_object_or_404, render
from django.urls import path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from omnium.clients.admin import DestinationAdmin
from omnium.clients.models import Destination
from omnium.delivery.models import DeliveryAttempt, DeliveryState, DeliverySwitch
from omnium.delivery.operations import connection_check, control
from omnium.delivery.permissions import may_drive_delivery
from omnium.read_only_admin import ReadOnlyAdmin


@admin.register(Destination)
class DestinationDeliveryAdmin(DestinationAdmin):
    """A destination's settings (from `clients`) with the actions that drive its delivery."""

    list_display = [*DestinationAdmin.list_display, "files_owed", "status_link"]
    actions = ["test_connection", "pause", "resume", "retry_now", "replay_dead_letters"]
    change_form_template = "admin/delivery/destination_change_form.html"

    def get_urls(self):
        test = self.admin_site.admin_view(require_POST(self.test_connection_view))
        return [path("<int:destination_id>/test-connection/", test, name="clients_destination_test_connection"),
                *super().get_urls()]

    def test_connection_view(self, request, destination_id: int):
        destination = get_object_or_404(Destination.objects.select_related("client"), pk=destination_id)
        if not self.has_change_permission(request, destination):  # it connects out and writes a file
            raise PermissionDenied
        return self._show_tests(request, [connection_check.run(destination)])

    @admin.action(description="Test the connection of the selected destinations", permissions=["change"])
    def test_connection(self, request, queryset):
        return self._show_tests(request, [connection_check.run(d) for d in queryset])

    def _show_tests(self, request, results):
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "results": results,
                   "title": "Connection test"}
        return render(request, "admin/delivery/connection_test.html", context)

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

    @admin.action(description="Pause the selected destinations", permissions=["change"])
    def pause(self, request, queryset):
        for destination in queryset:
            control.pause(destination.pk, f"paused from the destination list by {request.user}", by=request.user)
        self.message_user(request, f"{queryset.count()} destination(s) paused.", messages.SUCCESS)

    @admin.action(description="Resume the selected destinations", permissions=["change"])
    def resume(self, request, queryset):
        for destination in queryset:
            control.resume(destination.pk, by=request.user)
        self.message_user(request, f"{queryset.count()} destination(s) resumed.", messages.SUCCESS)

    @admin.action(description="Retry the selected destinations now", permissions=["change"])
    def retry_now(self, request, queryset):
        for destination in queryset:
            control.retry_now(destination.pk)
        self.message_user(request, f"{queryset.count()} destination(s) retrying now.", messages.SUCCESS)

    @admin.action(description="Replay all dead letters of the selected destinations", permissions=["change"])
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

    def has_resend_permission(self, request):
        # The rows are the pipeline's (read-only here); resending drives their destination.
        return may_drive_delivery(request.user)

    @admin.action(description="Resend / replay the selected files now", permissions=["resend"])
    def resend(self, request, queryset):
        resent = control.resend(queryset.values_list("pk", flat=True))
        self.message_user(request, f"{resent} file(s) will be resent.", messages.SUCCESS)


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(ReadOnlyAdmin):
    list_display = ["started_at", "destination", "doc_key", "seq", "ok", "is_test", "duration_ms", "bytes",
                    "error_class", "receipt"]
    list_filter = ["ok", "is_test", "permanent", "destination__kind"]
    search_fields = ["doc_key", "error", "receipt"]
    list_select_related = ["destination__client"]


@admin.register(DeliverySwitch)
class DeliverySwitchAdmin(admin.ModelAdmin):
    list_display = ["enabled", "reason", "changed_by", "changed_at"]
    readonly_fields = ["changed_by", "changed_at"]

    def save_model(self, request, switch, form, change):
        switch.pk, switch.changed_by = 1, request.user
        super().save_model(request, switch, form, change)
