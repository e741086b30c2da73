"""A new pull API key is shown once, on the page that answers its creation (`ShowSecretOnce`)."""

from datetime import timedelta

from omnium.clients.models import ApiKey
from omnium.shown_once_admin import ShowSecretOnce


class ShowIssuedKeyOnce(ShowSecretOnce):
    """ModelAdmin mixin for ApiKey: adding one issues a key and answers with a page showing it."""

    shown_once_template = "admin/clients/apikey/issued.html"

    def make_with_secret(self, request, key, form) -> dict:
        days = form.cleaned_data.get("old_keys_expire_in_days")
        issued, plain = ApiKey.issue(key.client, key.name, old_keys_expire_in=timedelta(days=days) if days else None,
                                     query_string_allowed=key.query_string_allowed, expires_at=key.expires_at)
        key.pk, key.lookup_id, key.key_hash = issued.pk, issued.lookup_id, issued.key_hash
        return {"title": f"New key for {key.client.name}", "key": key, "plain_key": plain}
