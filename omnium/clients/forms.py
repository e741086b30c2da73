"""The destination form: each kind's settings and credentials as typed fields, generated from
the transport's own declarations (``setting_fields``). The JSON config is still what is
stored; credentials are write-only (typed in, never shown again) and stored encrypted."""

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.utils.html import escape

from omnium.clients import address_policy_settings, secrets_manager
from omnium.clients.credentials import CredentialError
from omnium.clients.models import MAX_CONNECT_TIMEOUT_S, MAX_SEND_TIMEOUT_S, Destination
from omnium.clients.setting_fields import (
    config_field_name,
    credential_field,
    credential_field_name,
    form_field,
)
from omnium.transports import registry
from omnium.transports.base import TransportError

# A destination may be stricter than its transport allows, never looser (clients.models).
DESTINATION_LIMITS = {"connect_timeout": MAX_CONNECT_TIMEOUT_S, "send_timeout": MAX_SEND_TIMEOUT_S}
MAIN_FIELDS = ["client", "name", "kind"]
DELIVERY_FIELDS = ["enabled", "disabled_reason", "fast_retries", "fenced", "fence_reason"]


def _label(name: str) -> str:
    return name.replace("_", " ")


def _typed_fields() -> dict[str, forms.Field]:
    fields = {}
    for kind, transport in registry.TRANSPORTS.items():
        for name, setting in transport.config_schema.items():
            fields[config_field_name(kind, name)] = form_field(
                setting, label=_label(name), maximum=DESTINATION_LIMITS.get(name))
        for name, setting in transport.credentials_schema.items():
            fields[credential_field_name(kind, name)] = credential_field(setting, label=_label(name))
    return fields


def fieldsets() -> list[tuple]:
    """The form's layout: each kind's settings and credentials in a fieldset of their own,
    which the page's script shows only for the chosen kind (all show without JavaScript)."""
    layout = [(None, {"fields": MAIN_FIELDS})]
    for kind, transport in registry.TRANSPORTS.items():
        classes = ["transport-settings", f"transport-{kind}"]
        layout.append((f"{transport.label}: settings", {
            "fields": [config_field_name(kind, name) for name in transport.config_schema], "classes": classes}))
        if transport.credentials_schema:
            layout.append((f"{transport.label}: credentials (write-only, stored encrypted)", {
                "fields": [credential_field_name(kind, name) for name in transport.credentials_schema],
                "classes": classes}))
    layout.append(("Stored credentials", {"fields": ["forget_credentials", "aws_secret", "aws_secret_stage"]}))
    layout.append(("Delivery", {"fields": DELIVERY_FIELDS}))
    return layout


class _DestinationSettingsForm(forms.ModelForm):
    forget_credentials = forms.BooleanField(
        required=False, label="Forget the stored credentials",
        help_text="Drop what is stored and keep only what is typed above: e.g. an S3 destination with "
                  "no keys then sends as the worker's own AWS identity (its pod or instance role).")

    aws_secret = forms.CharField(
        required=False, max_length=2048, label="Credentials from AWS Secrets Manager",
        help_text="Instead of typing them: the name or ARN of a secret whose value is a JSON object with this "
                  "kind's credential names, e.g. {\"password\": \"…\"}. The workers read it with their own AWS "
                  "identity and pick up a rotation within OMNIUM_SECRETS_CACHE_S.")
    aws_secret_stage = forms.ChoiceField(choices=[(s, s) for s in secrets_manager.STAGES], initial="AWSCURRENT",
                                         required=False,
                                         label="Version stage of the secret")

    class Meta:
        model = Destination
        fields = MAIN_FIELDS + DELIVERY_FIELDS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.new_credentials: dict | None = None
        if self.instance.pk:
            for name, value in (self.instance.config or {}).items():
                self.initial[config_field_name(self.instance.kind, name)] = value
            if self.instance.credentials_encrypted:
                self._note_credentials_are_set(self.instance.kind)

    def _note_credentials_are_set(self, kind: str) -> None:
        transport = registry.TRANSPORTS.get(kind)
        state = self._credentials_state(transport) if transport else None
        for name in transport.credentials_schema if transport else ():
            field = self.fields[credential_field_name(kind, name)]
            # Help text is shown as HTML: the state may hold what someone typed (a secret's name).
            field.help_text = ("Credentials are set (hidden): type new ones to replace them all, leave empty "
                               "to keep them. They are dropped if the destination is pointed elsewhere "
                               f"({', '.join(transport.credentials_bound_to)}). {escape(state or '')} {field.help_text}")

    def _credentials_state(self, transport) -> str | None:
        try:
            stored = self.instance.stored_credentials
            return secrets_manager.describe(stored) or transport.credentials_state(stored)
        except CredentialError:
            return "The stored credentials cannot be decrypted with the key ring: type them again."

    def clean(self):
        cleaned = super().clean()
        kind = cleaned.get("kind")
        self._forget_other_kinds(kind)
        transport = registry.TRANSPORTS.get(kind)
        if transport is None:
            return cleaned
        config = self._typed_config(kind, transport.config_schema)
        self.new_credentials = self._typed_credentials(kind, transport.credentials_schema, config)
        self.instance.config = config
        if not self.errors:
            self._check_with_transport(kind, config)
        return cleaned

    def _forget_other_kinds(self, kind: str | None) -> None:
        """Fields of the kinds not chosen are hidden in the page: their errors are nobody's."""
        for name in list(self.errors):
            if "__" in name and not name.startswith(f"{kind}__"):
                del self.errors[name]

    def _typed_config(self, kind: str, schema: dict) -> dict:
        config = {}
        for name, setting in schema.items():
            field = config_field_name(kind, name)
            value = self.cleaned_data.get(field)
            if value is None or value == "":
                if setting.required and field not in self.errors:
                    self.add_error(field, f"Required for {registry.TRANSPORTS[kind].label}.")
                continue
            config[name] = value
        return config

    def _typed_credentials(self, kind: str, schema: dict, config: dict) -> dict | None:
        """The credentials typed in, or None to keep the stored ones: nothing typed, and the
        destination still points where they were given for (a secret never follows it to a
        new address: then only what is typed counts)."""
        typed = {name: self.cleaned_data[credential_field_name(kind, name)] for name in schema
                 if self.cleaned_data.get(credential_field_name(kind, name))}
        secret_id = (self.cleaned_data.get("aws_secret") or "").strip()
        if secret_id:
            if typed:
                self.add_error("aws_secret", "Type the credentials or name a secret, not both.")
            return secrets_manager.reference(secret_id, self.cleaned_data.get("aws_secret_stage") or "AWSCURRENT")
        forget = self.cleaned_data.get("forget_credentials")
        stored = bool(self.instance.credentials_encrypted) and not forget
        same_target = stored and not self.instance.points_elsewhere_than(kind, config)
        if not typed and same_target:
            return None
        if forget:
            why = "the stored credentials are being forgotten: type new ones"
        elif stored:
            why = "the destination now points elsewhere: type its credentials again"
        else:
            why = "credentials are never kept across kinds or addresses"
        for name, setting in schema.items():
            if setting.required and name not in typed:
                self.add_error(credential_field_name(kind, name), f"Required: {why}.")
        return self._replacing_stored(kind, typed, config) if same_target else typed

    def _replacing_stored(self, kind: str, typed: dict, config: dict) -> dict:
        """New credentials for the same target; the kind may keep some of the old (a webhook's
        old secret signs beside the new one for a while)."""
        try:
            stored = self.instance.stored_credentials
        except CredentialError:  # unreadable: nothing of it can be kept
            return typed
        if secrets_manager.reference_in(stored) is not None:  # nothing typed to keep beside the new
            return typed
        return registry.TRANSPORTS[kind].credentials_replacing(stored, typed, config)

    def _check_with_transport(self, kind: str, config: dict) -> None:
        """The transport itself refuses what the declarations cannot say (an SFTP login
        needs a password or a private key)."""
        try:
            credentials = self.new_credentials if self.new_credentials is not None else self.instance.stored_credentials
            if secrets_manager.reference_in(credentials) is not None:
                return  # read by the workers at each use; the admin need not reach AWS
            registry.transport_for(kind, config, credentials).close()
        except (TransportError, CredentialError) as exc:
            self.add_error(None, str(exc))

    def full_clean(self):
        super().full_clean()
        self._refused_address_beside_its_field()

    def _refused_address_beside_its_field(self) -> None:
        """The model checks the JSON config too (one source of truth) and its findings go
        above the form; a refused address goes beside the field that names the server."""
        above = self.errors.get(NON_FIELD_ERRORS)
        refused = [e for e in above.as_data() if e.code == address_policy_settings.REFUSED_ADDRESS] if above else []
        if not refused:
            return
        kept = [e for e in above.as_data() if e.code != address_policy_settings.REFUSED_ADDRESS]
        del self.errors[NON_FIELD_ERRORS]
        if kept:
            self.add_error(None, kept)
        self.add_error(self._address_field(), refused)

    def _address_field(self) -> str:
        kind = self.instance.kind
        return config_field_name(kind, registry.TRANSPORTS[kind].address_setting)

    def save(self, commit=True):
        destination = super().save(commit=False)
        if self.new_credentials is not None:
            destination.set_credentials(self.new_credentials)
        if commit:
            destination.save()
            self.save_m2m()  # set by ModelForm.save(commit=False)
        return destination


# The typed fields are declared on the class (the admin builds its form from the declared
# fields named in the fieldsets), one set per transport in the registry.
DestinationForm = type(_DestinationSettingsForm)(
    "DestinationForm", (_DestinationSettingsForm,), {"__module__": __name__, **_typed_fields()})


class DestinationSummaryForm(forms.ModelForm):
    """The few fields a client's page edits inline; settings are edited on the destination's page,
    and so are switch-offs (disable, fence), which need a reason."""

    class Meta:
        model = Destination
        fields = ["name"]
