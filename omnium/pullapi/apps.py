from django.apps import AppConfig


class PullApiConfig(AppConfig):
    name = "omnium.pullapi"
    verbose_name = "Pull API"

    def ready(self):
        from omnium.pullapi import change_notices, pull_cache_upkeep, schema  # noqa: F401 (schema extension)

        change_notices.connect()
        pull_cache_upkeep.connect()
