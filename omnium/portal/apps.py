from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "omnium.portal"
    verbose_name = "Client portal"
