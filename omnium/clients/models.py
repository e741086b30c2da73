"""Who gets what: clients, their destinations (one place we push to) and subscriptions."""

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models, transaction
from django.utils import timezone

from omnium.clients import address_policy_settings, file_names, secrets_manager, system_destinations, transforms
from omnium.clients import credentials as credential_store
from omnium.clients.shapes import Shape
from omnium.feeds.models import FeedDefinition
from omnium.transports import registry as transport_registry

# ARCHITECTURE rule 5: connect within 10 s, the whole send within 60 s. Destinations may be
# stricter, never looser: the sender's lease is sized on these bounds.
MAX_CONNECT_TIMEOUT_S = 10.0
MAX_SEND_TIMEOUT_S = 60.0
MAX_FAST_RETRIES = 10


class SwitchOff(models.Model):
    """Who switched something off, when and why (a reason is required)."""

    reason = models.TextField(blank=True)
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                           related_name="+")
    at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


SHAPE_HELP = "How its files are shaped, pulled and pushed alike (a subscription may override it)."


class Client(models.Model):
    name = models.CharField(max_length=100, unique=True)
    active = models.BooleanField(default=True, help_text="Switched-off clients get nothing, pushed or pulled.")
    transform = models.CharField(max_length=20, choices=transforms.choices, default="json", help_text=SHAPE_HELP)
    include_version = models.BooleanField(default=False, help_text="Put the version number in the file.")
    include_result_marks = models.BooleanField(default=True, help_text="Keep provisional / official marks.")
    switched_off_reason = models.TextField(blank=True)
    switched_off_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                        on_delete=models.SET_NULL, related_name="+")
    switched_off_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return self.name

    @property
    def shape(self) -> Shape:
        return Shape(self.transform, self.include_version, self.include_result_marks)

    def switch_off(self, reason: str, by=None) -> None:
        if not reason or not reason.strip():
            raise ValidationError({"switched_off_reason": "Say why the client is switched off."})
        self.active, self.switched_off_reason = False, reason.strip()
        self.switched_off_by, self.switched_off_at = by, timezone.now()
        self.save()

    def switch_on(self) -> None:
        self.active = True
        self.switched_off_reason, self.switched_off_by, self.switched_off_at = "", None, None
        self.save()

    def clean(self):
        if not self.active and not self.switched_off_reason.strip():
            raise ValidationError({"switched_off_reason": "Say why the client is switched off."})


class Destination(models.Model):
    """One place we push files for one client, e.g. "NDTV over S3"."""

    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="destinations")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=transport_registry.choices)
    config = models.JSONField(default=dict, blank=True,
                              help_text="Settings of this kind of transport (host, bucket, url…), as JSON.")
    credentials_encrypted = models.BinaryField(editable=False, default=b"")
    system = models.BooleanField(default=False, editable=False,
                                 help_text="Kept by Omnium itself (the pull cache): read-only, no stored password.")
    enabled = models.BooleanField(default=True)
    disabled_reason = models.TextField(blank=True)
    disabled_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    disabled_at = models.DateTimeField(null=True, blank=True)
    fenced = models.BooleanField(default=False, help_text="Fenced: nothing is sent until the fence is lifted.")
    fence_reason = models.TextField(blank=True)
    fenced_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                  on_delete=models.SET_NULL, related_name="+")
    fenced_at = models.DateTimeField(null=True, blank=True)
    fast_retries = models.PositiveSmallIntegerField(
        default=5, validators=[MaxValueValidator(MAX_FAST_RETRIES)],
        help_text=f"Quick retries (1 s, doubling) after a failure (0–{MAX_FAST_RETRIES}); then one about every "
                  "minute for ten minutes, then every 5 minutes.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["client", "name"], name="destination_name_per_client")]

    def __str__(self):
        return f"{self.client.name} over {self.get_kind_display()} ({self.name})"

    def save(self, *args, **kwargs):
        if self.system:
            self.credentials_encrypted = b""  # read from the settings at each use (`credentials`)
        self._forget_credentials_of_a_former_target(kwargs.get("update_fields"))
        super().save(*args, **kwargs)

    def _forget_credentials_of_a_former_target(self, update_fields) -> None:
        """A secret never follows a destination to a new address: pointed elsewhere (in the
        admin or anywhere else) with the credentials it had, it keeps none. Credentials set
        with the change (typed again) stay."""
        if self.pk is None or not self.credentials_encrypted:
            return
        if update_fields is not None and not {"kind", "config"} & set(update_fields):
            return
        before = Destination.objects.filter(pk=self.pk).values_list("kind", "config", "credentials_encrypted").first()
        if before is None:
            return
        kind, config, stored = before
        if bytes(self.credentials_encrypted) == bytes(stored) and self.points_elsewhere_than(kind, config):
            self.credentials_encrypted = b""

    @property
    def credentials(self) -> dict:
        """The credentials a send uses: typed ones, or those of the AWS secret they refer to
        (raises CredentialError, or its SecretError, when they cannot be had)."""
        return self.credentials_and_secret_version()[0]

    @property
    def stored_credentials(self) -> dict:
        """What is stored: typed credentials, or a reference to an AWS secret (secrets_manager)."""
        return credential_store.decrypt(self.credentials_encrypted)

    def credentials_and_secret_version(self) -> tuple[dict, str | None]:
        """The credentials, and the version id of the AWS secret they were read from (None when
        typed): a rotated secret gives another version, and the worker a new transport."""
        if self.system:
            return system_destinations.pull_redis_url_and_credentials()[1], None
        stored = self.stored_credentials
        found = secrets_manager.reference_in(stored)
        if found is None:
            return stored, None
        return secrets_manager.resolve(found, transport_registry.TRANSPORTS[self.kind].credentials_schema)

    def set_credentials(self, values: dict) -> None:
        self.credentials_encrypted = credential_store.encrypt(values)

    def points_elsewhere_than(self, kind: str, config: dict) -> bool:
        """Whether this destination's credentials would go somewhere else than they would with
        `kind` and `config` (another kind, host, port, URL, bucket, user name or host key)."""
        if kind != self.kind or kind not in transport_registry.TRANSPORTS:
            return True
        transport = transport_registry.TRANSPORTS[kind]
        return transport.target_of(config or {}) != transport.target_of(self.config or {})

    def can_send(self) -> bool:
        return self.enabled and not self.fenced and self.client.active

    def clean(self):
        transport = transport_registry.TRANSPORTS.get(self.kind)
        if transport is None:
            return
        problems = transport.validate_config(self.config or {})
        problems += _timeout_problems(self.config or {})
        # Findings about the config as a whole, not one form field: the admin form shows them
        # above its fields (a refused address beside the field that names the server).
        if problems:
            raise ValidationError(problems)
        address_policy_settings.check(transport, self.config or {}, system=self.system)
        if self.fenced and not self.fence_reason.strip():
            raise ValidationError({"fence_reason": "Say why the destination is fenced."})
        if not self.enabled and not self.disabled_reason.strip():
            raise ValidationError({"disabled_reason": "Say why the destination is disabled."})


def _timeout_problems(config: dict) -> list[str]:
    problems = []
    for key, limit in (("connect_timeout", MAX_CONNECT_TIMEOUT_S), ("send_timeout", MAX_SEND_TIMEOUT_S)):
        value = config.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > limit:
            problems.append(f"{key} must be at most {limit:g} seconds")
    return problems


def _check_template(value: str) -> None:
    try:
        file_names.check_template(value)
    except file_names.FileNameError as exc:
        raise ValidationError(str(exc)) from None


class Subscription(models.Model):
    """Which files go to a destination, under which name, how often, and in the client's shape
    unless a shape field is set here (blank: as the client)."""

    destination = models.ForeignKey(Destination, on_delete=models.CASCADE, related_name="subscriptions")
    definition = models.ForeignKey(FeedDefinition, on_delete=models.CASCADE, related_name="subscriptions")
    filter = models.CharField(max_length=30, blank=True,
                              help_text="For a per-country feed: one NOC code, or blank for every country.")
    file_name_template = models.CharField(max_length=200, default=file_names.DEFAULT_TEMPLATE,
                                          validators=[_check_template])
    transform = models.CharField(max_length=20, choices=transforms.choices, blank=True, default="",
                                 help_text="Blank: the client's transform.")
    schedule_seconds = models.PositiveIntegerField(
        default=0, validators=[MaxValueValidator(86_400)],
        help_text="Also resend on this timer even when unchanged (0 = only on change; at least 10).",
    )
    include_version = models.BooleanField(null=True, blank=True, default=None,
                                          help_text="Put the version number in the file (blank: as the client).")
    include_result_marks = models.BooleanField(null=True, blank=True, default=None,
                                               help_text="Keep provisional / official marks (blank: as the client).")
    active = models.BooleanField(default=True)

    def __str__(self):
        suffix = f"/{self.filter}" if self.filter else ""
        return f"{self.definition}{suffix} → {self.destination.name}"

    @property
    def shape(self) -> Shape:
        """The shape its files are sent in: the client's, but for the fields set here."""
        client = self.destination.client
        return Shape(self.transform or client.transform,
                     client.include_version if self.include_version is None else self.include_version,
                     client.include_result_marks if self.include_result_marks is None else self.include_result_marks)

    def clean(self):
        if self.schedule_seconds and self.schedule_seconds < 10:
            raise ValidationError({"schedule_seconds": "Use 0 (only on change) or at least 10 seconds."})
        if self.filter and self.definition_id and not self.definition.per_noc:
            raise ValidationError({"filter": f"{self.definition} has one file per Games; leave the filter blank."})


# --- Pull API: keys and entitlements --------------------------------------------------------


class ApiKey(models.Model):
    """A secret key a client sends to pull files. Kept only as a hash, shown once when issued.

    A client may hold several active keys, so a new key can be rolled out before the old one
    is revoked. A revoked key stops working on every API process within a second; an expired
    one from its expiry on. Issuing a new key gives the client's older keys an expiry (7 days
    unless chosen), the window in which the client moves to the new one.
    """

    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, help_text="What the key is for, e.g. “production 2026”.")
    lookup_id = models.CharField(max_length=16, unique=True, editable=False,
                                 help_text="The public start of the key; the rest is secret.")
    key_hash = models.CharField(max_length=64, editable=False)
    query_string_allowed = models.BooleanField(
        default=False,
        help_text="Legacy clients only: accept the key as ?key= in the address (scrubbed from logs).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True,
                                      help_text="From then on the key is refused, as a revoked one. Empty: never.")
    # When an API process last saw the key used, written at most once a minute per process.
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        verbose_name = "API key"

    def __str__(self):
        return f"{self.lookup_id}… ({self.client.name}: {self.name})"

    @property
    def active(self) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > timezone.now())

    @classmethod
    def issue(cls, client: Client, name: str, old_keys_expire_in: timedelta | None = None,
              **fields) -> tuple["ApiKey", str]:
        """A new saved key and its plain text: the only time the plain text exists. With
        `old_keys_expire_in`, the client's other working keys that expire later (or never)
        expire that long from now."""
        from omnium.clients import key_format

        plain = key_format.new_key()
        with transaction.atomic():
            if old_keys_expire_in is not None:
                ends = timezone.now() + old_keys_expire_in
                cls.objects.filter(client=client, revoked_at__isnull=True).filter(
                    models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=ends)).update(expires_at=ends)
            # Saved after the update: its notice (post_save) tells the API processes of both.
            key = cls.objects.create(client=client, name=name, lookup_id=key_format.lookup_id(plain),
                                     key_hash=key_format.digest(plain), **fields)
        return key, plain

    def revoke(self, by=None) -> None:
        if self.revoked_at is None:
            self.revoked_at, self.revoked_by = timezone.now(), by
            self.save(update_fields=["revoked_at", "revoked_by"])


class Entitlement(models.Model):
    """A feed a client may pull, in the client's shape.

    A blank filter entitles every file of the definition (every country of a per-country
    feed); otherwise only that one. A client entitled to a feed also gets its split files
    (the calendar's per-day and per-fixture files). A client shape other than plain JSON as
    built is rendered at publish time into the client's own Redis keys (its pull cache
    destination, kept up by omnium.pullapi.pull_cache_upkeep on every save).
    """

    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="entitlements")
    definition = models.ForeignKey(FeedDefinition, on_delete=models.CASCADE, related_name="entitlements")
    filter = models.CharField(max_length=30, blank=True,
                              help_text="For a per-country feed: one NOC code, or blank for every country.")
    active = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["client", "definition", "filter"], name="one_entitlement_per_file"),
        ]

    def __str__(self):
        suffix = f"/{self.filter}" if self.filter else ""
        return f"{self.client.name}: {self.definition}{suffix}"

    def clean(self):
        if self.filter and self.definition_id and not self.definition.per_noc:
            raise ValidationError({"filter": f"{self.definition} has one file per Games; leave the filter blank."})


class Package(models.Model):
    """A named bundle of feed files sold together, e.g. "Medals + Results".

    Applied to a destination (push) or to a client's entitlements (pull) by
    omnium.clients.packages, which creates the rows once: a later change to the package
    reaches nobody until it is applied again.
    """

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    definitions = models.ManyToManyField(FeedDefinition, related_name="packages", verbose_name="feeds")

    def __str__(self):
        return self.name
