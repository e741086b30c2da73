"""A new pull API key is shown once, on the page that answers its creation.

Not in a message: Django keeps messages in a cookie (or the session) until they are shown, so
the key would travel back and forth in a cookie and sit in the browser's and proxies' stores.
The admin sends the page with `Cache-Control: no-store`; nothing else keeps the key.
"""

from datetime import timedelta

from django.template.response import TemplateResponse

from omnium.clients.models import ApiKey

ISSUED_KEY_TEMPLATE = "admin/clients/apikey/issued.html"


class ShowIssuedKeyOnce:
    """ModelAdmin mixin for ApiKey: adding one issues a key and answers with a page showing it."""

    def save_model(self, request, key, form, change):
        if change:
            super().save_model(request, key, form, change)
            return
        days = form.cleaned_data.get("old_keys_expire_in_days")
        issued, plain = ApiKey.issue(key.client, key.name, old_keys_expire_in=timedelta(days=days) if days else None,
                                     query_string_allowed=key.query_string_allowed, expires_at=key.expires_at)
        key.pk, key.lookup_id, key.key_hash = issued.pk, issued.lookup_id, issued.key_hash
        request.issued_api_key = plain  # read by response_add of this same request, then gone

    def response_add(self, request, key, post_url_continue=None):
        plain = getattr(request, "issued_api_key", None)
        if plain is None:
            return super().response_add(request, key, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "title": f"New key for {key.client.name}", "opts": self.model._meta, "key": key, "plain_key": plain,
        }
        return TemplateResponse(request, ISSUED_KEY_TEMPLATE, context)
