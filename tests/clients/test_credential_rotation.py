"""`manage.py rotate_credentials`: the step between putting a new key first in
OMNIUM_CREDENTIAL_KEYS and removing the old one. Every row is re-encrypted with the new key;
a row no key reads, or one written meanwhile, is never lost or overwritten; and the command
says whether the old key may go."""

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.test import override_settings

from omnium.clients import credentials
from omnium.clients.models import Client, Destination

OLD, NEW, FOREIGN = (Fernet.generate_key().decode() for _ in range(3))


def webhook(name: str, secret: str, ring: list[str]) -> Destination:
    client, _ = Client.objects.get_or_create(name="Rotation")
    destination = Destination(client=client, name=name, kind="webhook", config={"url": "https://example.com/in"})
    with override_settings(OMNIUM_CREDENTIAL_KEYS=ring):
        destination.set_credentials({"secret": secret})
    destination.save()
    return destination


def stored(destination: Destination) -> bytes:
    return bytes(Destination.objects.get(pk=destination.pk).credentials_encrypted)


def read_with(ring: list[str], destination: Destination) -> dict:
    with override_settings(OMNIUM_CREDENTIAL_KEYS=ring):
        return credentials.decrypt(stored(destination))


def rotate(capsys) -> str:
    with override_settings(OMNIUM_CREDENTIAL_KEYS=[NEW, OLD]):
        call_command("rotate_credentials")
    return capsys.readouterr().out


def test_every_destination_is_re_encrypted_with_the_new_key_and_the_old_one_may_go(db, capsys):
    first, second = webhook("first", "whsec_one", [OLD]), webhook("second", "whsec_two", [OLD])

    said = rotate(capsys)

    assert (read_with([NEW], first), read_with([NEW], second)) == ({"secret": "whsec_one"}, {"secret": "whsec_two"})
    assert "re-encrypted the credentials of 2 destination(s)" in said
    assert "the older keys may be removed" in said


def test_a_row_no_key_reads_is_named_and_left_as_stored_and_the_others_are_rotated(db, capsys):
    readable, foreign = webhook("readable", "whsec_one", [OLD]), webhook("foreign", "whsec_x", [FOREIGN])
    foreign_bytes = stored(foreign)

    with pytest.raises(CommandError, match=rf"unreadable, left as stored: #{foreign.pk} Rotation / foreign\b"):
        rotate(capsys)

    assert read_with([NEW], readable) == {"secret": "whsec_one"}
    assert stored(foreign) == foreign_bytes


def test_credentials_staff_save_meanwhile_are_not_overwritten_with_the_old_ones(db, capsys, monkeypatch):
    """Staff save a new secret between the command's read of the row and its write."""
    destination = webhook("busy", "whsec_old", [OLD])
    rotate_as_the_library_does = credentials.rotate

    def staff_save_meanwhile(token: bytes) -> bytes:
        rotated = rotate_as_the_library_does(token)
        if credentials.decrypt(token) == {"secret": "whsec_old"}:  # the admin, holding the new ring
            Destination.objects.filter(pk=destination.pk).update(
                credentials_encrypted=credentials.encrypt({"secret": "whsec_typed_meanwhile"}))
        return rotated

    monkeypatch.setattr(credentials, "rotate", staff_save_meanwhile)
    said = rotate(capsys)

    assert read_with([NEW], destination) == {"secret": "whsec_typed_meanwhile"}
    assert "re-encrypted the credentials of 1 destination(s)" in said


def test_a_row_saved_with_the_old_key_meanwhile_keeps_the_old_key_in_the_ring(db, capsys, monkeypatch):
    """An admin not yet restarted with the new ring saves a destination the command has done."""
    done_first, later = webhook("done first", "whsec_one", [OLD]), webhook("later", "whsec_two", [OLD])
    rotate_as_the_library_does = credentials.rotate

    def old_admin_saves_the_first_row(token: bytes) -> bytes:
        if credentials.decrypt(token) == {"secret": "whsec_two"}:
            with override_settings(OMNIUM_CREDENTIAL_KEYS=[OLD]):
                Destination.objects.filter(pk=done_first.pk).update(
                    credentials_encrypted=credentials.encrypt({"secret": "whsec_one_again"}))
        return rotate_as_the_library_does(token)

    monkeypatch.setattr(credentials, "rotate", old_admin_saves_the_first_row)
    with pytest.raises(CommandError, match=rf"still encrypted with an older key.*#{done_first.pk} Rotation / done first"):
        rotate(capsys)

    assert read_with([NEW, OLD], done_first) == {"secret": "whsec_one_again"}
    assert read_with([NEW], later) == {"secret": "whsec_two"}
