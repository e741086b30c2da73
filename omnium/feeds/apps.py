from django.apps import AppConfig


class FeedsConfig(AppConfig):
    name = "omnium.feeds"
    verbose_name = "Feed files"

    def ready(self):
        from omnium.feeds import hints  # noqa: F401  (connects the post-commit hints)
