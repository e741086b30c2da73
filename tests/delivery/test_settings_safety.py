"""Destination settings: credentials stay secret, file names stay inside the destination."""


import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import override_settings

from omnium.clients import credentials
from omnium.clients.credentials import CredentialError
from omnium.clients.models import Destination, Subscription
from omnium.delivery.engine import sender
from omnium.delivery.models import DeliveryState
from omnium.feeds.models import FeedDefinition
from tests.delivery.fixtures import webhook_settings

SECRET = "whsec_c2VjcmV0LXRoYXQtbXVzdC1uZXZlci1sZWFr"


def test_credentials_cannot_be_read_back_from_the_database_or_the_admin(small_games, subscribe, receiver,
                                                                        admin_client):
    kind, config, _ = webhook_settings(receiver.url)
    destination = subscribe(small_games, (kind, config, {"secret": SECRET}))

    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM clients_destination WHERE id = %s", [destination.pk])
        row = " ".join(str(bytes(v) if isinstance(v, memoryview) else v) for v in cursor.fetchone())
    page = admin_client.get(f"/admin/clients/destination/{destination.pk}/change/").content.decode()

    assert SECRET not in row and "c2VjcmV0LXRoYXQtbXVzdC1uZXZlci1sZWFr" not in row
    assert SECRET not in page and "Credentials are set (hidden)" in page
    assert Destination.objects.get(pk=destination.pk).credentials == {"secret": SECRET}


def test_saving_the_admin_form_without_new_credentials_keeps_the_old_ones(small_games, subscribe, receiver,
                                                                          admin_client):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    before = bytes(destination.credentials_encrypted)
    form = {"client": destination.client_id, "name": destination.name, "kind": destination.kind,
            "webhook__url": receiver.url, "webhook__cred__secret": "", "enabled": "on", "fast_retries": 5,
            "fence_reason": "", "subscriptions-TOTAL_FORMS": 0, "subscriptions-INITIAL_FORMS": 0}

    reply = admin_client.post(f"/admin/clients/destination/{destination.pk}/change/", form)

    assert reply.status_code == 302
    assert bytes(Destination.objects.get(pk=destination.pk).credentials_encrypted) == before


def test_credentials_survive_a_key_rotation_and_a_missing_key_is_an_error_not_empty():
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    with override_settings(OMNIUM_CREDENTIAL_KEYS=[old]):
        token = credentials.encrypt({"password": "p"})
    with override_settings(OMNIUM_CREDENTIAL_KEYS=[new, old]):
        assert credentials.decrypt(token) == {"password": "p"}
        rotated = credentials.rotate(token)
    with override_settings(OMNIUM_CREDENTIAL_KEYS=[new]):
        assert credentials.decrypt(rotated) == {"password": "p"}
        with pytest.raises(CredentialError, match="cannot be decrypted"):
            credentials.decrypt(token)


@pytest.mark.parametrize("template, message", [
    ("../../etc/{name}.{ext}", "path traversal"),
    ("{games}/../{name}.{ext}", "path traversal"),
    ("/var/feeds/{name}.{ext}", "absolute path"),
    ("{games}\\\\{name}.{ext}", "backslash"),
    ("{games}/{secret}.{ext}", "unknown placeholder"),
    ("{games}/{filter:.>2}.{ext}", "no format spec or conversion"),
    ("{games!r}/{name}.{ext}", "no format spec or conversion"),
    ("{games}/{name:{ext}}", "no format spec or conversion"),
    ("{games.__class__}/{name}.{ext}", "no attribute or index access"),
    ("{games[0]}/{name}.{ext}", "no attribute or index access"),
    ("{0}/{name}.{ext}", "unknown placeholder"),
    ("{games}/\u202e{name}.{ext}", "bidi"),
    ("{games}/\x85{name}.{ext}", "control"),
])
def test_a_file_name_template_that_escapes_the_destination_is_refused(small_games, subscribe, receiver,
                                                                      template, message):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    subscription = Subscription(destination=destination, file_name_template=template,
                                definition=FeedDefinition.objects.get(games=small_games, feed_type="medals"))
    with pytest.raises(ValidationError, match=message):
        subscription.full_clean()


def test_a_config_outside_the_transport_schema_is_refused_with_a_clear_message(small_games, subscribe, receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    destination.config = {"url": receiver.url, "send_timeout": 600, "colour": "blue"}
    with pytest.raises(ValidationError) as refused:
        destination.full_clean()
    assert "send_timeout must be at most 60 seconds" in str(refused.value)
    assert "unknown setting 'colour'" in str(refused.value)


def test_a_path_made_unsafe_after_validation_is_refused_at_send_and_nothing_arrives(small_games, subscribe,
                                                                                    receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    # A template written around validation (a migration, a shell): the send checks the real path.
    Subscription.objects.filter(destination=destination).update(file_name_template="{games}/\u202e{name}.{ext}")

    assert sender.drain(destination.pk) == sender.Outcome.FAILED

    assert receiver.deliveries == []
    state = DeliveryState.objects.get(destination=destination)
    assert state.dead_lettered_at is not None and "bidi character (U+202E)" in state.last_error


def test_a_credentials_form_sent_back_with_errors_never_echoes_the_typed_secret(small_games, subscribe, receiver,
                                                                              admin_client):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    form = {"client": destination.client_id, "name": destination.name, "kind": destination.kind,
            "webhook__url": "not a url", "webhook__cred__secret": SECRET, "enabled": "on",
            "fast_retries": 5, "fence_reason": "", "subscriptions-TOTAL_FORMS": 0, "subscriptions-INITIAL_FORMS": 0}

    reply = admin_client.post(f"/admin/clients/destination/{destination.pk}/change/", form)

    page = reply.content.decode()
    assert reply.status_code == 200 and "errornote" in page  # sent back with errors
    assert SECRET not in page and "c2VjcmV0LXRoYXQtbXVzdC1uZXZlci1sZWFr" not in page
