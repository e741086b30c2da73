import uuid

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, Q
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from omnium.clients.admin import DestinationAdmin
from omnium.clients.models import Destination
from omnium.conf import omnium_setting
from omnium.delivery.models import DeliveryAttempt, DeliveryState, DeliverySwitch, Probe
from omnium.delivery.operations import control, probes
from omnium.delivery.permissions import may_drive_delivery
from omnium.read_only_admin import ReadOnlyAdmin
from omnium.routing import delivery_queue


def _own_probes(request):
    """The probes a person may see: those they started (a superuser sees every one)."""
    return Probe.objects.all() if request.user.is_superuser else Probe.objects.filter(requested_by=request.user)


def _uuids(texts: list[str]) -> list[uuid.UUID]:
    found = []
    for text in texts:
        try:
            found.append(uuid.UUID(text))
        except ValueError:
            continue  # a mangled link shows fewer tests, not an error page
    return found


def _shown(probe: Probe, with_destination: bool = True) -> dict:
    """What a page shows of a probe: waiting, what it found, or that its worker was lost."""
    abandoned = probes.is_abandoned(probe)
    shown = {"waiting": probe.finished_at is None and not abandoned, **(probe.outcome or {})}
    if abandoned:
        shown.update(ok=False, plain="No outcome: the delivery worker that took this test stopped before it ended.")
    if with_destination:
        shown["destination"] = probe.destination
    return shown


def _flower_broker_page() -> str | None:
    """Flower's page that lists every queue, or None when OMNIUM_FLOWER_URL is not set."""
    flower = omnium_setting("FLOWER_URL")
    return f"{flower.rstrip('/')}/broker" if flower else None


@admin.register(Destination)
class DestinationDeliveryAdmin(DestinationAdmin):
    """A destination's settings (from `clients`) with the actions that drive its delivery."""

    list_display = [*DestinationAdmin.list_display, "files_owed", "status_link", "queue"]
    actions = ["test_connection", "pause", "resume", "retry_now", "replay_dead_letters"]
    change_form_template = "admin/delivery/destination_change_form.html"

    def get_urls(self):
        def view(method, post=False):
            return self.admin_site.admin_view(require_POST(method) if post else method)

        return [path("<int:destination_id>/test-connection/", view(self.test_connection_view, post=True),
                     name="clients_destination_test_connection"),
                path("fetch-host-key/", view(self.fetch_host_key_view, post=True),
                     name="clients_destination_fetch_host_key"),
                path("connection-tests/", view(self.connection_tests_view), name="clients_destination_connection_tests"),
                path("probes/<uuid:probe_id>/", view(self.probe_view), name="clients_destination_probe"),
                *super().get_urls()]

    def test_connection_view(self, request, destination_id: int):
        destination = get_object_or_404(Destination.objects.select_related("client"), pk=destination_id)
        if not self.has_change_permission(request, destination):  # it connects out and writes a file
            raise PermissionDenied
        return self._start_tests(request, [destination])

    @admin.action(description="Test the connection of the selected destinations", permissions=["change"])
    def test_connection(self, request, queryset):
        return self._start_tests(request, list(queryset))

    def _start_tests(self, request, destinations):
        """Run by delivery workers (probes): the page that follows shows each result as it comes."""
        started = probes.start_connection_tests(request.user, destinations)
        if started.not_started:
            self.message_user(request, f"{started.not_started} of {len(destinations)} tests were not started: "
                                       f"{started.why_not}.", messages.WARNING)
        ids = "&".join(f"id={probe.pk}" for probe in started.probes)
        return redirect(f"{reverse('admin:clients_destination_connection_tests')}?{ids}")

    def connection_tests_view(self, request):
        tests = _own_probes(request).filter(pk__in=_uuids(request.GET.getlist("id")),
                                            kind=Probe.Kind.CONNECTION_TEST).select_related("destination__client")
        results = [_shown(probe) for probe in tests.order_by("destination__name")]
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "results": results,
                   "title": "Connection test", "waiting": any(result["waiting"] for result in results)}
        return render(request, "admin/delivery/connection_test.html", context)

    def fetch_host_key_view(self, request):
        """It connects to the host typed in: only for those who may add or edit destinations."""
        if not (self.has_add_permission(request) or self.has_change_permission(request)):
            raise PermissionDenied
        host, port = request.POST.get("host", "").strip(), request.POST.get("port", "").strip() or "22"
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            return JsonResponse({"error": "Fill in the host and a port between 1 and 65535 first."}, status=400)
        started = probes.start_host_key_fetch(request.user, host, int(port), request.POST.get("pinned", ""))
        if started.not_started:
            return JsonResponse({"error": f"Not started: {started.why_not}."}, status=429)
        url = reverse("admin:clients_destination_probe", args=[started.probes[0].pk])
        return JsonResponse({"status_url": url}, status=202)

    def probe_view(self, request, probe_id):
        """A host-key fetch's outcome, for the form's script to poll."""
        probe = get_object_or_404(_own_probes(request), pk=probe_id)
        return JsonResponse(_shown(probe, with_destination=False))

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

    @admin.display(description="queue")
    def queue(self, destination):
        """The destination's queue by name (Flower and RabbitMQ list queues, not clients), linked
        to Flower's broker page when OMNIUM_FLOWER_URL says where Flower is."""
        name, flower = delivery_queue(destination.pk), _flower_broker_page()
        if flower is None:
            return name
        return format_html('<a href="{}" title="find {} in Flower\'s broker page">{}</a>', flower, name, name)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra = {"queue": delivery_queue(int(object_id)) if str(object_id).isdigit() else None,
                 "flower_broker_page": _flower_broker_page(), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra)

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
            control.retry_now(destination.pk, by=request.user)
        self.message_user(request, f"{queryset.count()} destination(s) retrying now.", messages.SUCCESS)

    @admin.action(description="Replay all dead letters of the selected destinations", permissions=["change"])
    def replay_dead_letters(self, request, queryset):
        replayed = sum(control.replay_dead_letters(destination.pk, by=request.user) for destination in queryset)
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
        resent = control.resend(queryset.values_list("pk", flat=True), by=request.user)
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


@admin.register(Probe)
class ProbeAdmin(ReadOnlyAdmin):
    """Who tested which destination's connection or fetched which host's key, and what came of it."""

    list_display = ["requested_at", "kind", "requested_by", "destination", "host", "port", "finished_at", "ok"]
    list_filter = ["kind", "requested_by"]
    search_fields = ["host", "destination__name", "requested_by__username"]
    list_select_related = ["destination__client", "requested_by"]

    @admin.display(boolean=True)
    def ok(self, probe):
        return (probe.outcome or {}).get("ok")
