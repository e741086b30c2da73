"""Staff accounts: passwords a person sets are checked, and a session lasts hours, not weeks."""

import time

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from omnium.staff import sign_in_budget

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("weak, why", [("password1234", "too common"), ("8246813579024", "entirely numeric"),
                                       ("short1", "too short")])
def test_a_weak_password_is_refused_when_an_admin_creates_a_staff_user(admin_client, weak, why):
    reply = admin_client.post("/admin/auth/user/add/", {"username": "newcomer", "password1": weak,
                                                        "password2": weak, "usable_password": "true"})

    assert reply.status_code == 200, "the form comes back"
    assert why in reply.content.decode()
    assert not User.objects.filter(username="newcomer").exists()


def test_a_strong_password_is_taken(admin_client):
    strong = "correct horse battery staple 7"
    reply = admin_client.post("/admin/auth/user/add/", {"username": "newcomer", "password1": strong,
                                                        "password2": strong, "usable_password": "true"})
    assert reply.status_code == 302


def test_a_staff_session_lasts_a_working_day(client, django_user_model):
    django_user_model.objects.create_user("operator", password="correct horse battery staple 7", is_staff=True)

    reply = client.post("/admin/login/?next=/admin/", {"username": "operator",
                                                       "password": "correct horse battery staple 7"})

    assert reply.status_code == 302
    assert int(reply.cookies[settings.SESSION_COOKIE_NAME]["max-age"]) == 8 * 3600


def test_sign_ins_beyond_the_budget_are_refused_without_a_password_check_and_said_in_the_log(
        client, django_user_model, monkeypatch, caplog):
    """A flood of sign-ins from many addresses must not take the pull API's cores: beyond one
    password check a second (a burst of two), an attempt is refused before any hash is made."""
    django_user_model.objects.create_user("operator", password="correct horse battery staple 7", is_staff=True)
    monkeypatch.setattr(sign_in_budget, "password_checks", sign_in_budget.TokenBucket(per_s=1.0, burst=2))
    hashed, check_password = [], User.check_password
    monkeypatch.setattr(User, "check_password", lambda self, raw: hashed.append(raw) or check_password(self, raw))
    guesses = [client.post("/admin/login/", {"username": "operator", "password": f"guess {n}"}) for n in range(3)]

    assert [reply.status_code for reply in guesses] == [200, 200, 429] and guesses[2]["Retry-After"] == "2"
    assert hashed == ["guess 0", "guess 1"], "the third attempt was refused before its password was looked at"
    assert "More sign-ins reach this server than it checks" in guesses[2].content.decode()
    assert any("sign-in attempt(s) refused unchecked" in record.getMessage() for record in caplog.records)

    time.sleep(1.05)  # a token back: the operator signs in
    signed_in = client.post("/admin/login/", {"username": "operator", "password": "correct horse battery staple 7"})
    assert signed_in.status_code == 302
