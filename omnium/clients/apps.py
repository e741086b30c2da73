from django.apps import AppConfig


class ClientsConfig(AppConfig):
    name = "omnium.clients"
    verbose_name = "Clients and destinations"
