"""Staff accounts: passwords a person sets are checked, and a session lasts hours, not weeks."""

import pytest
from django.conf import settings
from django.contrib.auth.models import User

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
