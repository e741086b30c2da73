"""Admin forms: credentials are write-only (typed in, never shown again)."""

import json

from django import forms
from django.core.exceptions import ValidationError

from omnium.clients.models import Destination
from omnium.transports import registry
from omnium.transports.base import validate


class WriteOnlyTextarea(forms.Textarea):
    """A textarea that never renders what was typed: a form sent back with errors (a typo in
    the config, say) would otherwise print the typed secret into the page, and into every
    cache and screenshot of it. Like PasswordInput(render_value=False), for JSON."""

    def format_value(self, value):
        return None


class DestinationForm(forms.ModelForm):
    new_credentials = forms.CharField(
        required=False, label="Credentials",
        widget=WriteOnlyTextarea(attrs={"rows": 3, "autocomplete": "off", "placeholder": '{"password": "…"}'}),
        help_text="JSON. Write-only: stored encrypted and never shown again. Leave empty to keep the current ones.",
    )

    class Meta:
        model = Destination
        fields = ["client", "name", "kind", "config", "new_credentials", "enabled", "fast_retries",
                  "fenced", "fence_reason"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.credentials_encrypted:
            self.fields["new_credentials"].help_text = (
                "Credentials are set (hidden). Type new JSON to replace them; leave empty to keep them."
            )

    def clean_new_credentials(self):
        text = self.cleaned_data["new_credentials"].strip()
        if not text:
            return None
        try:
            values = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"Credentials must be JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from exc
        if not isinstance(values, dict):
            raise ValidationError("Credentials must be a JSON object.")
        return values

    def clean(self):
        cleaned = super().clean()
        kind, values = cleaned.get("kind"), cleaned.get("new_credentials")
        if kind in registry.TRANSPORTS and values is not None:
            problems = validate(registry.TRANSPORTS[kind].credentials_schema, values)
            if problems:
                self.add_error("new_credentials", problems)
        return cleaned

    def save(self, commit=True):
        destination = super().save(commit=False)
        if self.cleaned_data.get("new_credentials") is not None:
            destination.set_credentials(self.cleaned_data["new_credentials"])
        if commit:
            destination.save()
        return destination
