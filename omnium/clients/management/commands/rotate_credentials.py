from django.core.management.base import BaseCommand

from omnium.clients import credentials
from omnium.clients.models import Destination


class Command(BaseCommand):
    help = "Re-encrypt every destination's credentials with the first key of OMNIUM_CREDENTIAL_KEYS."

    def handle(self, **options):
        rotated = 0
        for destination in Destination.objects.exclude(credentials_encrypted=b""):
            Destination.objects.filter(pk=destination.pk).update(
                credentials_encrypted=credentials.rotate(destination.credentials_encrypted))
            rotated += 1
        self.stdout.write(f"re-encrypted the credentials of {rotated} destination(s)")
