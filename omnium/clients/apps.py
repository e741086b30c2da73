from django.apps import AppConfig


class ClientsConfig(AppConfig):
    name = "omnium.clients"
    verbose_name = "Clients and destinations"

    def ready(self):
        from omnium.clients import destination_addresses
        from omnium.transports import address_policy

        # Every connect of every transport in this process follows the settings from now on.
        address_policy.use(destination_addresses.policy)
