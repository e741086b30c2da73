from django.apps import AppConfig


class PullApiConfig(AppConfig):
    name = "omnium.pullapi"
    verbose_name = "Pull API"

    def ready(self):
        from omnium.pullapi import change_notices, resolvers, schema  # noqa: F401 (schema extension)

        # The split and public documents are feed files like any other: registered here so
        # the builder, the outbox reader and delivery treat them as such.
        resolvers.register()
        change_notices.connect()
