"""An authenticator app as a second factor, for staff who set one up (issue 31, django-otp):
set up from the person's own page with one right code, asked for at every sign-in after that,
throttled when wrong, and removed only with a right code. Without one, the password signs in."""

import base64
import time

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.test import Client as Browser
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

pytestmark = pytest.mark.django_db

PASSWORD = "a long enough password"
PAGE = "/admin/authenticator/"


@pytest.fixture
def ops():
    return User.objects.create_superuser("ops", "ops@example.org", PASSWORD)


def code_of(app: TOTPDevice, steps_ahead: int = 0) -> str:
    """What the phone shows now (or that many 30-second steps later: django-otp accepts one
    step of drift, and never a code of a step it has already seen)."""
    totp = TOTP(app.bin_key, app.step, app.t0, app.digits, app.drift)
    totp.time = time.time() + steps_ahead * app.step
    return f"{totp.token():06d}"


def sign_in(browser: Browser, **fields):
    return browser.post("/admin/login/?next=/admin/", {"username": "ops", "password": PASSWORD, **fields})


def signed_in(browser: Browser) -> Browser:
    assert sign_in(browser).status_code == 302
    return browser


def set_up_app(browser: Browser) -> TOTPDevice:
    page = browser.get(PAGE)
    assert page.status_code == 200
    assert 'src="data:image/svg+xml;base64,' in page.text  # the QR code, inside the page's CSP
    app = TOTPDevice.objects.get(user__username="ops", confirmed=False)
    assert secret_shown(page.text, app)
    assert browser.post(PAGE, {"code": code_of(app)}).status_code == 302
    app.refresh_from_db()
    assert app.confirmed
    return app


def secret_shown(page: str, app: TOTPDevice) -> bool:
    secret = base64.b32encode(app.bin_key).decode()
    return " ".join(secret[i:i + 4] for i in range(0, len(secret), 4)) in page


def test_without_an_app_the_password_alone_signs_in(ops):
    assert sign_in(Browser()).status_code == 302


def test_an_app_scanned_but_never_confirmed_changes_nothing(ops):
    browser = signed_in(Browser())
    browser.get(PAGE)
    browser.post(PAGE, {"code": "not a code"})

    assert TOTPDevice.objects.filter(user=ops, confirmed=False).exists()
    assert sign_in(Browser()).status_code == 302


def test_once_set_up_every_sign_in_needs_the_apps_code(ops):
    browser = signed_in(Browser())
    app = set_up_app(browser)
    assert browser.get("/admin/").status_code == 200  # the session that set it up stays in
    assert LogEntry.objects.filter(object_id=str(ops.pk), change_message="set up an authenticator app").exists()

    without_code = sign_in(Browser())
    assert without_code.status_code == 200
    assert "type the 6-digit code it shows" in without_code.text

    code = code_of(app, steps_ahead=1)
    with_code = Browser()
    assert sign_in(with_code, otp_token=code).status_code == 302
    assert with_code.get("/admin/").status_code == 200

    # The same code again: a code seen once is spent. (Computed anew, it would be the next
    # step's, a fresh code, whenever a 30 s step ended between the two sign-ins: CI failed so.)
    replayed = sign_in(Browser(), otp_token=code)
    assert replayed.status_code == 200
    assert "not the one the authenticator app shows now" in replayed.text


def test_wrong_codes_are_throttled(ops):
    set_up_app(signed_in(Browser()))
    sign_in(Browser(), otp_token="not a code")

    again = sign_in(Browser(), otp_token="not a code")

    assert again.status_code == 200
    assert "Verification temporarily disabled because of 1 failed attempt" in again.text


def test_a_session_signed_in_before_the_app_was_set_up_elsewhere_must_sign_in_again(ops):
    earlier = signed_in(Browser())
    set_up_app(signed_in(Browser()))

    answer = earlier.get("/admin/")

    assert answer.status_code == 302
    assert answer["Location"].startswith("/admin/login/")


def test_the_app_is_removed_only_with_its_current_code(ops):
    browser = signed_in(Browser())
    app = set_up_app(browser)

    refused = browser.post(PAGE, {"code": "not a code"})
    assert refused.status_code == 200
    assert TOTPDevice.objects.filter(user=ops, confirmed=True).exists()

    time.sleep(1.1)  # django-otp's wait after one wrong code
    assert browser.post(PAGE, {"code": code_of(app, steps_ahead=1)}).status_code == 302
    assert not TOTPDevice.objects.filter(user=ops).exists()
    assert sign_in(Browser()).status_code == 302


def test_staff_see_who_has_an_app_never_its_secret_and_delete_one_for_a_lost_phone(ops, admin_client):
    app = set_up_app(signed_in(Browser()))
    listing = admin_client.get("/admin/otp_totp/totpdevice/")
    assert listing.status_code == 200
    assert "ops" in listing.text

    page = admin_client.get(f"/admin/otp_totp/totpdevice/{app.pk}/change/")

    assert page.status_code == 200
    assert app.key not in page.text
    assert base64.b32encode(app.bin_key).decode() not in page.text
    admin_client.post(f"/admin/otp_totp/totpdevice/{app.pk}/delete/", {"post": "yes"})
    assert sign_in(Browser()).status_code == 302  # the password alone again
