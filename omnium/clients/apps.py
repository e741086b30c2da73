from django.apps import AppConfig


class ClientsConfig(AppConfig):
    name = "omnium.clients"
    verbose_name = "Clients and destinations"

    def ready(self):
        from omnium.clients import address_policy_settings
        from omnium.transports import address_policy

        # Every connect of every transport in this process follows the settings from now on.
        address_policy.use(address_policy_settings.policy)
