"""The admin base for rows made with a secret: the secret is shown once, on the page that
answers the form that made it, and nowhere else.

Not in a message: Django keeps messages in a cookie (or the session) until they are shown, so
the secret would travel back and forth in a cookie and sit in the browser's and proxies'
stores. The admin's pages are sent with `Cache-Control: no-store`; only a digest is kept.
"""

from django.template.response import TemplateResponse


class ShowSecretOnce:
    """ModelAdmin mixin: adding a row calls `make_with_secret`, which saves the row its own way
    and returns what the page shows (the secret among it); the answer is `shown_once_template`."""

    shown_once_template: str

    def make_with_secret(self, request, row, form) -> dict:
        raise NotImplementedError

    def save_model(self, request, row, form, change):
        if change:
            super().save_model(request, row, form, change)
            return
        request.shown_once = self.make_with_secret(request, row, form)  # read by response_add, then gone

    def response_add(self, request, row, post_url_continue=None):
        shown = getattr(request, "shown_once", None)
        if shown is None:
            return super().response_add(request, row, post_url_continue)
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, **shown}
        return TemplateResponse(request, self.shown_once_template, context)
