from django.apps import AppConfig


class FeedsConfig(AppConfig):
    name = "omnium.feeds"
    verbose_name = "Feed files"

    def ready(self):
        from omnium.database import fast_timestamps  # noqa: F401  (builds read thousands of timestamps)
        from omnium.feeds import (
            hints,  # noqa: F401  (connects the post-commit hints)
            stopping,  # noqa: F401  (connects the warm shutdown)
        )
