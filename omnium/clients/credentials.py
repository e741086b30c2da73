"""Destination credentials, encrypted at rest with a key ring (Fernet, AES-128-CBC + HMAC).

The ring is OMNIUM_CREDENTIAL_KEYS: the first key encrypts, every key decrypts, so a new key
is put first, `manage.py rotate_credentials` re-encrypts every row, and then the old key is
removed — no downtime. A value that no key can decrypt is an error, never an empty dict.
Only the admin and the delivery workers hold the ring (OMNIUM_HOLDS_CREDENTIAL_KEYS); anywhere
else both directions are an error that says so.
"""

import json

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class CredentialError(Exception):
    """Stored credentials cannot be decrypted with any key of the ring."""


def _ring() -> MultiFernet:
    return MultiFernet([Fernet(key) for key in _ring_keys()])


def _ring_keys() -> list:
    if not settings.OMNIUM_CREDENTIAL_KEYS:
        raise CredentialError("this process holds no credential keys (OMNIUM_HOLDS_CREDENTIAL_KEYS=false): only "
                              "the admin and the delivery workers encrypt or decrypt destination credentials")
    return settings.OMNIUM_CREDENTIAL_KEYS


def encrypt(credentials: dict) -> bytes:
    return _ring().encrypt(json.dumps(credentials, sort_keys=True).encode())


def decrypt(token: bytes) -> dict:
    if not token:
        return {}
    try:
        return json.loads(_ring().decrypt(bytes(token)))
    except InvalidToken:
        raise CredentialError(
            "credentials cannot be decrypted with any key in OMNIUM_CREDENTIAL_KEYS"
        ) from None


def rotate(token: bytes) -> bytes:
    """The same credentials, encrypted with the ring's first key."""
    try:
        return _ring().rotate(bytes(token))
    except InvalidToken:
        raise CredentialError("credentials cannot be decrypted with any key in the ring") from None


def readable_with_the_first_key_alone(token: bytes) -> bool:
    """Whether the ring's first key alone decrypts this: once every stored value is, the older
    keys may be removed from the ring."""
    try:
        Fernet(_ring_keys()[0]).decrypt(bytes(token))
    except InvalidToken:
        return False
    return True
