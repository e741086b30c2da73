"""Form fields generated from a transport's own ``Setting`` declarations, so the admin's form
and the JSON validation share one source of truth: a new setting in a transport is a new
field in the form, with its type, bounds, default and help.

Each kind's fields are named ``<kind>__<setting>`` (config) and ``<kind>__cred__<setting>``
(credentials): every kind's fields are in the page, and the form reads only the chosen kind's.
"""

from django import forms
from django.core.exceptions import ValidationError

from omnium.transports.base import Setting

CREDENTIAL_MARK = "cred"


def config_field_name(kind: str, name: str) -> str:
    return f"{kind}__{name}"


def credential_field_name(kind: str, name: str) -> str:
    return f"{kind}__{CREDENTIAL_MARK}__{name}"


def form_field(setting: Setting, *, label: str, maximum: float | None = None) -> forms.Field:
    """A field for one config setting. Never required by the browser: only the chosen kind's
    required settings are, which the form checks itself (a hidden field must not block a submit)."""
    options = {"label": label, "required": False, "help_text": _help(setting, maximum),
               "initial": setting.default, "validators": [_checked(setting)] if setting.check else []}
    highest = _lower(setting.maximum, maximum)
    if setting.choices:
        # An optional choice without a default starts empty: nothing is sent unless chosen.
        blank = [("", "—")] if not setting.required and setting.default is None else []
        return forms.ChoiceField(choices=blank + [(c, c) for c in setting.choices], **options)
    if setting.kind is bool:
        return forms.BooleanField(**options)
    if setting.kind is int:
        return forms.IntegerField(min_value=setting.minimum, max_value=highest, **options)
    if setting.kind is float:
        return forms.FloatField(min_value=setting.minimum, max_value=highest,
                                widget=forms.NumberInput(attrs={"step": "any"}), **options)
    widget = forms.Textarea(attrs={"rows": 3}) if setting.multiline else forms.TextInput(attrs={"size": 60})
    return forms.CharField(widget=widget, **options)


def credential_field(setting: Setting, *, label: str) -> forms.Field:
    """A write-only field for one credential: never rendered back (a form sent back with an
    error elsewhere would otherwise print the secret into the page)."""
    if setting.multiline:
        widget = WriteOnlyTextarea(attrs={"rows": 4, "autocomplete": "off"})
    else:
        widget = forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password", "size": 60})
    return forms.CharField(label=label, required=False, widget=widget, strip=False,
                           help_text=setting.help, validators=[_checked(setting)] if setting.check else [])


class WriteOnlyTextarea(forms.Textarea):
    """A textarea that never renders what was typed. Like PasswordInput(render_value=False)."""

    def format_value(self, value):
        return None


def _checked(setting: Setting):
    def validate(value):
        problem = setting.check(value) if value not in (None, "") else None
        if problem:
            raise ValidationError(f"This {problem}.")
    return validate


def _lower(first: float | None, second: float | None) -> float | None:
    bounds = [bound for bound in (first, second) if bound is not None]
    return min(bounds) if bounds else None


def _help(setting: Setting, maximum: float | None) -> str:
    bounded = Setting(setting.kind, minimum=setting.minimum, maximum=_lower(setting.maximum, maximum),
                      choices=setting.choices)
    facts = [] if setting.kind in (str, bool) and not setting.choices else [bounded.describe()]
    if setting.default not in (None, ""):
        facts.append(f"default {setting.default}")
    return f"{setting.help} ({'; '.join(facts)})" if facts else setting.help
