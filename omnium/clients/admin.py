from django import forms
from django.contrib import admin, messages
from django.db.models import Count
from django.utils import timezone

from omnium.clients import audit, packages
from omnium.clients.forms import DestinationForm, DestinationSummaryForm, fieldsets
from omnium.clients.key_issuing import ShowIssuedKeyOnce
from omnium.clients.models import ApiKey, Client, Destination, Entitlement, Package, Subscription
from omnium.feeds.models import FeedDefinition


class DestinationInline(admin.TabularInline):
    """A client's destinations at a glance. A destination is added on its own page, where
    its kind's settings are typed."""

    model = Destination
    form = DestinationSummaryForm
    extra = 0
    fields = ["name", "kind", "enabled", "fenced"]
    readonly_fields = ["kind", "enabled", "fenced"]  # switched off with a reason, on the destination's page
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


class ApiKeyInline(admin.TabularInline):
    """The client's pull keys at a glance: when each was made, last used and ends. Issued and
    revoked on the keys' own pages (a key is shown once, when issued)."""

    model = ApiKey
    extra = 0
    fields = ["lookup_id", "name", "created_at", "last_used_at", "expires_at", "revoked_at"]
    readonly_fields = fields
    show_change_link = True
    verbose_name_plural = "pull keys (issue a new one under API keys › Add)"

    def has_add_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Client)
class ClientAdmin(admin.ModelAdmin):
    list_display = ["name", "active", "transform", "include_version", "include_result_marks", "destination_count",
                    "switched_off_reason", "switched_off_at", "switched_off_by"]
    list_filter = ["active", "transform"]
    search_fields = ["name"]
    readonly_fields = ["switched_off_by", "switched_off_at"]
    fieldsets = [
        (None, {"fields": ["name", "active", "switched_off_reason", "switched_off_by", "switched_off_at"]}),
        ("Shape of its files, pulled and pushed", {
            "fields": ["transform", "include_version", "include_result_marks"],
            "description": "Every entitlement and subscription uses this shape; a subscription may set "
                           "its own transform or marks instead. A change is sent again at once: to "
                           "destinations, and to pull clients under a new ETag.",
        }),
    ]
    inlines = [DestinationInline, ApiKeyInline]
    actions = ["switch_on"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(destination_total=Count("destinations"))

    @admin.display(description="destinations", ordering="destination_total")
    def destination_count(self, client):
        return client.destination_total

    def save_model(self, request, client, form, change):
        # The model's own switch-off and switch-on record who, when and why (the form's clean
        # has already refused a switch-off without a reason).
        if "active" in form.changed_data:
            if client.active:
                client.switch_on()
            else:
                client.switch_off(client.switched_off_reason, by=request.user)
            return
        super().save_model(request, client, form, change)

    @admin.action(description="Switch on the selected clients", permissions=["change"])
    def switch_on(self, request, queryset):
        for client in queryset:
            client.switch_on()
        self.message_user(request, f"{queryset.count()} client(s) switched on.", messages.SUCCESS)


class SubscriptionInline(admin.TabularInline):
    """Shape fields left blank follow the client's shape."""

    model = Subscription
    extra = 1
    fields = ["definition", "filter", "file_name_template", "transform", "schedule_seconds",
              "include_version", "include_result_marks", "active"]

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "definition":  # its label names the Games: one query, not one per option
            kwargs["queryset"] = FeedDefinition.objects.select_related("games").order_by("games__code", "feed_type")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class DestinationAdmin(admin.ModelAdmin):
    """The destination's settings. Registered by `omnium.delivery.admin`, which adds the
    actions that drive its delivery (pause, resume, retry, replay) and its status."""

    form = DestinationForm
    change_form_template = "admin/clients/destination/change_form.html"
    list_display = ["name", "client", "kind", "enabled", "fenced", "fast_retries", "system"]
    list_filter = ["kind", "enabled", "fenced", "system", "client"]
    search_fields = ["name", "client__name"]
    list_select_related = ["client"]
    inlines = [SubscriptionInline]

    def get_fieldsets(self, request, obj=None):
        return fieldsets()

    def has_change_permission(self, request, obj=None):
        """A system destination (the pull cache's) is kept by Omnium itself: read-only."""
        return super().has_change_permission(request, obj) and not (obj is not None and obj.system)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and not (obj is not None and obj.system)

    def save_model(self, request, destination, form, change):
        # Who and when for a switch-off; the model's clean has already refused one without a reason.
        if destination.fenced and "fenced" in form.changed_data:
            destination.fenced_by, destination.fenced_at = request.user, timezone.now()
        if not destination.fenced:
            destination.fence_reason, destination.fenced_by, destination.fenced_at = "", None, None
        if not destination.enabled and "enabled" in form.changed_data:
            destination.disabled_by, destination.disabled_at = request.user, timezone.now()
        if destination.enabled:
            destination.disabled_reason, destination.disabled_by, destination.disabled_at = "", None, None
        super().save_model(request, destination, form, change)


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "destination", "transform", "file_name_template", "schedule_seconds", "active"]
    list_filter = ["transform", "active", "definition__feed_type", "definition__games"]
    search_fields = ["destination__name", "destination__client__name", "definition__feed_type"]
    list_select_related = ["destination__client", "definition__games"]


# --- Pull API: keys and entitlements --------------------------------------------------------


class ApiKeyForm(forms.ModelForm):
    old_keys_expire_in_days = forms.IntegerField(
        min_value=0, max_value=365, initial=7, required=False, label="Older keys expire in (days)",
        help_text="The client's other working keys stop working this many days from now, the time it has to "
                  "move to the new key (a key already ending sooner keeps its end). 0 or empty: they stay.")

    class Meta:
        model = ApiKey
        fields = ["client", "name", "query_string_allowed", "expires_at"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:  # chosen when a key is issued only
            del self.fields["old_keys_expire_in_days"]


@admin.register(ApiKey)
class ApiKeyAdmin(ShowIssuedKeyOnce, admin.ModelAdmin):
    """Keys are issued here and shown once, on the page after saving; never again."""

    form = ApiKeyForm
    list_display = ["lookup_id", "client", "name", "query_string_allowed", "created_at", "last_used_at", "expires_at",
                    "revoked_at", "revoked_by"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), ("expires_at", admin.EmptyFieldListFilter),
                   "query_string_allowed", "client"]
    search_fields = ["lookup_id", "name", "client__name"]
    list_select_related = ["client", "revoked_by"]
    readonly_fields = ["lookup_id", "created_at", "last_used_at", "revoked_at", "revoked_by"]
    actions = ["revoke"]

    def get_readonly_fields(self, request, key=None):
        if key is None:
            return self.readonly_fields
        return [*self.readonly_fields, "client"]

    @admin.action(description="Revoke the selected keys (effective within a second)", permissions=["change"])
    def revoke(self, request, queryset):
        keys = list(queryset.filter(revoked_at__isnull=True))
        for key in keys:
            key.revoke(by=request.user)
        self.message_user(request, f"{len(keys)} key(s) revoked.", messages.SUCCESS)


@admin.register(Entitlement)
class EntitlementAdmin(admin.ModelAdmin):
    list_display = ["client", "definition", "filter", "client_shape", "active"]
    list_filter = ["active", "client__transform", "definition__games", "definition__feed_type", "client"]
    search_fields = ["client__name", "definition__feed_type", "filter"]
    list_select_related = ["client", "definition__games"]

    @admin.display(description="shape (the client's)", ordering="client__transform")
    def client_shape(self, entitlement):
        shape = entitlement.client.shape
        marks = [m for m, on in (("version", shape.include_version), ("result marks", shape.include_result_marks)) if on]
        return f"{shape.transform}" + (f" with {' and '.join(marks)}" if marks else "")


# --- Packages -------------------------------------------------------------------------------


class PackageForm(forms.ModelForm):
    """The package, and whom to apply it to now (once: later changes to it are not applied)."""

    subscribe_destinations = forms.ModelMultipleChoiceField(
        Destination.objects.select_related("client").order_by("client__name", "name"), required=False,
        label="Subscribe these destinations now",
        help_text="Push: each gets every file of the package. Applied once, when you save.")
    entitle_clients = forms.ModelMultipleChoiceField(
        Client.objects.order_by("name"), required=False, label="Entitle these clients now",
        help_text="Pull: each may pull every file of the package, in its own shape. Applied once, when you save.")

    class Meta:
        model = Package
        fields = ["name", "description", "definitions"]


# The form's apply fields and the model each creates rows of (a field set to None in a
# subclass is left out of the form, so a refused one cannot even be posted).
APPLIED_AS = {"subscribe_destinations": "subscription", "entitle_clients": "entitlement"}


@admin.register(Package)
class PackageAdmin(admin.ModelAdmin):
    """Applying is idempotent and a copy: a later change to the package reaches nobody until it
    is applied again (see omnium.clients.packages for why)."""

    form = PackageForm
    list_display = ["name", "feed_count", "description"]
    search_fields = ["name", "definitions__feed_type"]
    filter_horizontal = ["definitions"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(feed_total=Count("definitions"))

    @admin.display(description="feeds", ordering="feed_total")
    def feed_count(self, package):
        return package.feed_total

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if db_field.name == "definitions":  # its label names the Games: one query, not one per option
            kwargs["queryset"] = FeedDefinition.objects.select_related("games").order_by("games__code", "feed_type")
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def get_form(self, request, obj=None, **kwargs):
        """Applying a package creates and switches on subscriptions and entitlements: offered
        only to staff who may add and change those (change_package alone may not entitle
        any client to any feed)."""
        form = super().get_form(request, obj, **kwargs)
        refused = {field: None for field, model in APPLIED_AS.items()
                   if not all(request.user.has_perm(f"clients.{action}_{model}") for action in ("add", "change"))}
        return type(form.__name__, (form,), refused) if refused else form

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)  # the package's feeds first
        package = form.instance
        for destination in form.cleaned_data.get("subscribe_destinations", ()):
            applied = packages.subscribe(package, destination)
            audit.record(request.user, [destination], f"Package {package} applied: subscriptions {applied}")
            self.message_user(request, f"{package} → {destination}: subscriptions {applied}.", messages.SUCCESS)
        for client in form.cleaned_data.get("entitle_clients", ()):
            applied = packages.entitle(package, client)
            audit.record(request.user, [client], f"Package {package} applied: entitlements {applied}")
            self.message_user(request, f"{package} → {client} (pull): entitlements {applied}.", messages.SUCCESS)
