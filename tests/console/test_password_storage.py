"""Passwords are stored as Argon2id with OWASP's parameters (omnium/staff/password_hashing.py),
a check a tenth of PBKDF2's CPU; a password stored before with PBKDF2 still signs in, and is
stored again with Argon2id then."""

import pytest
from django.contrib.auth.models import User

from omnium import settings as product_settings

OWASP_ARGON2ID = "argon2$argon2id$v=19$m=19456,t=2,p=1$"


@pytest.fixture
def product_hashers(settings):
    settings.PASSWORD_HASHERS = product_settings.PASSWORD_HASHERS  # not the tests' fast one


def test_a_new_password_is_stored_as_argon2id_with_owasps_parameters(product_hashers, db):
    user = User.objects.create_user("ana", password="pale-horse-battery-42")

    assert user.password.startswith(OWASP_ARGON2ID)
    assert user.check_password("pale-horse-battery-42") and not user.check_password("pale-horse-battery-43")


def test_a_pbkdf2_password_still_signs_in_and_is_stored_again_as_argon2id(product_hashers, db, client, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    User.objects.create_user("ben", password="pale-horse-battery-42", is_staff=True)
    settings.PASSWORD_HASHERS = product_settings.PASSWORD_HASHERS
    assert User.objects.get(username="ben").password.startswith("pbkdf2_sha256$")

    answer = client.post("/admin/login/", {"username": "ben", "password": "pale-horse-battery-42", "next": "/admin/"})

    assert answer.status_code == 302 and answer["Location"] == "/admin/"
    assert User.objects.get(username="ben").password.startswith(OWASP_ARGON2ID)

