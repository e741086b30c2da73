from django.apps import AppConfig


class GamesConfig(AppConfig):
    name = "omnium.games"
    verbose_name = "Games data"
