"""Pull API keys: what a key looks like, and the only form in which we keep it.

A key is `omk_` + 8 id characters + 32 secret characters (about 190 random bits in all). The
first 12 characters ("omk_" and the id) are not secret: they name the key in the admin and in
logs, and let the API find the stored hash without scanning. The whole key is kept only as
its SHA-256: a key this random cannot be guessed from its hash, so a slow password hash would
only cost time on every request without adding safety.
"""

import hashlib
import hmac
import secrets
import string

PREFIX = "omk_"
ID_LENGTH = 8
SECRET_LENGTH = 32
LOOKUP_LENGTH = len(PREFIX) + ID_LENGTH
KEY_LENGTH = LOOKUP_LENGTH + SECRET_LENGTH
_ALPHABET = string.ascii_letters + string.digits


def _random(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def new_key() -> str:
    return PREFIX + _random(ID_LENGTH) + _random(SECRET_LENGTH)


def lookup_id(key: str) -> str:
    """The public part of a key: how it is listed and found ("omk_AbCd1234")."""
    return key[:LOOKUP_LENGTH]


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def looks_like_key(key: str) -> bool:
    return len(key) == KEY_LENGTH and key.startswith(PREFIX) and key[len(PREFIX):].isalnum()


def matches(key: str, stored_digest: str) -> bool:
    """Constant-time comparison, so response timing says nothing about a near miss."""
    return hmac.compare_digest(digest(key), stored_digest)
