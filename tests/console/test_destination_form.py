"""The destination form is typed from the transport's own declarations: each setting a real
field with its bounds, errors beside the field, the JSON config still what is stored, and the
credentials write-only and encrypted."""

import time

import pytest

from omnium.clients.models import Client, Destination
from tests.transports.kits import WEBHOOK_SECRET

pytestmark = pytest.mark.django_db

SFTP_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
OTHER_SFTP_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINjFGThgAKLuNEr8aiUNbhLv+WTfow9HQUbaZhRqIuC5"
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key-but-never-shown\n-----END OPENSSH PRIVATE KEY-----"


@pytest.fixture
def client_row():
    return Client.objects.create(name="Sportstar")


def _sftp_form(client_row, **changes) -> dict:
    form = {"client": client_row.pk, "name": "Sportstar over SFTP", "kind": "sftp",
            "sftp__host": "sftp.example.com", "sftp__port": "2222", "sftp__username": "feeds",
            "sftp__host_key": SFTP_KEY, "sftp__directory": "incoming", "sftp__connect_timeout": "5",
            "sftp__send_timeout": "30", "sftp__cred__password": "s3cret-pass",
            "enabled": "on", "fast_retries": "5", "fence_reason": "",
            "subscriptions-TOTAL_FORMS": "0", "subscriptions-INITIAL_FORMS": "0"}
    return {**form, **changes}


def _webhook_form(client_row, **changes) -> dict:
    return {"client": client_row.pk, "name": "hook", "kind": "webhook", "webhook__url": "https://hooks.example.com/f",
            "webhook__cred__secret": WEBHOOK_SECRET, "enabled": "on", "fast_retries": "5", "fence_reason": "",
            "subscriptions-TOTAL_FORMS": "0", "subscriptions-INITIAL_FORMS": "0", **changes}


def test_choosing_a_kind_shows_its_settings_as_typed_fields(admin_client):
    page = admin_client.get("/admin/clients/destination/add/").content.decode()

    assert 'name="sftp__port" value="22"' in page and 'type="number"' in page and 'max="65535"' in page
    assert 'name="s3__bucket"' in page and 'name="webhook__url"' in page
    assert 'class="module aligned transport-settings transport-sftp"' in page
    assert "SSH port. (an integer between 1 and 65535; default 22)" in page


def test_typed_form_stores_the_json_config_and_encrypted_credentials(admin_client, client_row):
    reply = admin_client.post("/admin/clients/destination/add/", _sftp_form(client_row))

    assert reply.status_code == 302, reply.content.decode()[:3000]
    destination = Destination.objects.get(name="Sportstar over SFTP")
    assert destination.config == {"host": "sftp.example.com", "port": 2222, "username": "feeds",
                                  "host_key": SFTP_KEY, "directory": "incoming", "connect_timeout": 5.0,
                                  "send_timeout": 30.0}
    assert destination.credentials == {"password": "s3cret-pass"}
    assert b"s3cret-pass" not in bytes(destination.credentials_encrypted)


def test_a_wrong_port_is_reported_beside_the_port_field(admin_client, client_row):
    reply = admin_client.post("/admin/clients/destination/add/", _sftp_form(client_row, sftp__port="70000"))

    errors = reply.context["adminform"].form.errors
    assert list(errors) == ["sftp__port"]
    assert "less than or equal to 65535" in errors["sftp__port"][0]
    assert not Destination.objects.exists()


def test_a_missing_required_setting_is_reported_beside_its_field(admin_client, client_row):
    reply = admin_client.post("/admin/clients/destination/add/", _sftp_form(client_row, sftp__host=""))

    assert reply.context["adminform"].form.errors["sftp__host"] == ["Required for SFTP."]


def test_a_timeout_above_the_destination_limit_is_refused_beside_it(admin_client, client_row):
    reply = admin_client.post("/admin/clients/destination/add/", _sftp_form(client_row, sftp__send_timeout="300"))

    assert "sftp__send_timeout" in reply.context["adminform"].form.errors


def test_a_check_of_the_transport_is_reported_beside_its_field(admin_client, client_row):
    reply = admin_client.post("/admin/clients/destination/add/", _sftp_form(client_row, sftp__host_key="not a key"))

    assert "OpenSSH public key" in reply.context["adminform"].form.errors["sftp__host_key"][0]


def test_fields_of_the_kinds_not_chosen_are_ignored(admin_client, client_row):
    reply = admin_client.post("/admin/clients/destination/add/", _sftp_form(client_row, s3__bucket="", ftp__port="0"))

    assert reply.status_code == 302
    assert "bucket" not in Destination.objects.get().config


def test_typed_credentials_are_never_rendered_back(admin_client, client_row):
    form = _sftp_form(client_row, sftp__cred__password="", sftp__cred__private_key=PRIVATE_KEY, sftp__port="0")

    page = admin_client.post("/admin/clients/destination/add/", form).content.decode()

    assert "errornote" in page and "not-a-real-key-but-never-shown" not in page


def test_saving_without_typing_credentials_keeps_them_while_the_destination_points_where_it_did(
        admin_client, client_row):
    admin_client.post("/admin/clients/destination/add/", _sftp_form(client_row))
    destination = Destination.objects.get()

    reply = admin_client.post(f"/admin/clients/destination/{destination.pk}/change/",
                              _sftp_form(client_row, sftp__cred__password="", sftp__directory="elsewhere"))

    assert reply.status_code == 302
    destination.refresh_from_db()
    assert destination.config["directory"] == "elsewhere" and destination.credentials == {"password": "s3cret-pass"}


@pytest.mark.parametrize("field, value", [("sftp__host", "attacker.example.com"), ("sftp__port", "2200"),
                                          ("sftp__username", "someone-else"), ("sftp__host_key", OTHER_SFTP_KEY)])
def test_pointing_a_destination_elsewhere_asks_for_its_credentials_again(admin_client, client_row, field, value):
    """Stored credentials never follow a destination to a new address (or to a server that
    proves itself with another host key): they must be typed again."""
    admin_client.post("/admin/clients/destination/add/", _sftp_form(client_row))
    destination = Destination.objects.get()

    reply = admin_client.post(f"/admin/clients/destination/{destination.pk}/change/",
                              _sftp_form(client_row, sftp__cred__password="", **{field: value}))

    assert reply.status_code == 200, "refused"
    assert "password or private_key is required" in str(reply.context["adminform"].form.errors)
    destination.refresh_from_db()
    assert destination.config["host"] == "sftp.example.com" and destination.credentials == {"password": "s3cret-pass"}

    typed_again = _sftp_form(client_row, sftp__cred__password="new-pass", **{field: value})
    assert admin_client.post(f"/admin/clients/destination/{destination.pk}/change/", typed_again).status_code == 302
    destination.refresh_from_db()
    assert destination.credentials == {"password": "new-pass"}


def test_a_webhook_pointed_at_a_new_url_needs_its_secret_typed_again(admin_client, client_row):
    form = _webhook_form(client_row)
    admin_client.post("/admin/clients/destination/add/", form)
    destination = Destination.objects.get(name="hook")

    moved = {**form, "webhook__url": "https://attacker.example.net/f", "webhook__cred__secret": ""}
    reply = admin_client.post(f"/admin/clients/destination/{destination.pk}/change/", moved)

    errors = reply.context["adminform"].form.errors
    assert "the destination now points elsewhere: type its credentials again" in errors["webhook__cred__secret"][0]
    destination.refresh_from_db()
    assert destination.config["url"] == "https://hooks.example.com/f"


def test_a_destination_pointed_elsewhere_outside_the_admin_keeps_no_credentials(client_row):
    destination = Destination.objects.create(client=client_row, name="ftp", kind="ftp",
                                             config={"host": "ftp.example.com", "username": "feeds"})
    destination.set_credentials({"password": "s3cret-pass"})
    destination.save()

    destination.config = {**destination.config, "directory": "incoming"}
    destination.save()
    assert Destination.objects.get().credentials == {"password": "s3cret-pass"}, "same server: kept"

    destination.config = {**destination.config, "host": "attacker.example.com"}
    destination.save()
    assert Destination.objects.get().credentials == {}, "a new server gets no stored password"


def test_the_change_page_fills_the_typed_fields_from_the_stored_json(admin_client, client_row):
    admin_client.post("/admin/clients/destination/add/", _sftp_form(client_row))

    page = admin_client.get(f"/admin/clients/destination/{Destination.objects.get().pk}/change/").content.decode()

    assert 'name="sftp__port" value="2222"' in page and 'name="sftp__host" value="sftp.example.com"' in page
    assert "s3cret-pass" not in page


def test_a_webhook_destination_takes_its_secret_from_the_typed_field(admin_client, client_row):
    form = _webhook_form(client_row)

    assert admin_client.post("/admin/clients/destination/add/", form).status_code == 302
    assert Destination.objects.get(name="hook").credentials == {"secret": WEBHOOK_SECRET}


NEW_SECRET = "whsec_" + "TmV3U2VjcmV0TmV3U2VjcmV0TmV3U2VjcmV0"


@pytest.mark.parametrize("overlap_hours, kept", [("", True), ("0", False)])
def test_typing_a_new_webhook_secret_keeps_the_old_one_signing_for_the_overlap(
        admin_client, client_row, overlap_hours, kept):
    """Issue 33: a secret rotated in the admin; the receiver has the overlap (24 h unless set)
    to move to the new one, and no file fails verification meanwhile."""
    form = _webhook_form(client_row, webhook__secret_overlap_hours=overlap_hours)
    admin_client.post("/admin/clients/destination/add/", form)
    destination = Destination.objects.get(name="hook")

    reply = admin_client.post(f"/admin/clients/destination/{destination.pk}/change/",
                              {**form, "webhook__cred__secret": NEW_SECRET})

    assert reply.status_code == 302
    destination.refresh_from_db()
    stored = destination.credentials
    assert stored["secret"] == NEW_SECRET
    page = admin_client.get(f"/admin/clients/destination/{destination.pk}/change/").content.decode()
    if kept:
        assert stored["previous_secret"] == WEBHOOK_SECRET
        assert 23.9 * 3600 < stored["previous_secret_until"] - time.time() <= 24 * 3600
        assert "Rotating: the previous secret signs beside the current one until" in page
    else:
        assert "previous_secret" not in stored
        assert "Rotating" not in page
    assert WEBHOOK_SECRET not in page and NEW_SECRET not in page


def test_the_same_secret_typed_again_or_a_new_url_starts_no_overlap(admin_client, client_row):
    form = _webhook_form(client_row)
    admin_client.post("/admin/clients/destination/add/", form)
    destination = Destination.objects.get(name="hook")
    change = f"/admin/clients/destination/{destination.pk}/change/"

    admin_client.post(change, form)
    assert Destination.objects.get(pk=destination.pk).credentials == {"secret": WEBHOOK_SECRET}

    admin_client.post(change, {**form, "webhook__url": "https://hooks.example.com/g", "webhook__cred__secret": NEW_SECRET})
    assert Destination.objects.get(pk=destination.pk).credentials == {"secret": NEW_SECRET}, \
        "an old secret never follows a destination to a new address"


def test_an_optional_choice_starts_empty_so_nothing_is_sent_unless_chosen(admin_client, client_row):
    """An S3 destination saved without touching its ACL or encryption sends neither (a bucket
    with ACLs disabled refuses any ACL)."""
    page = admin_client.get("/admin/clients/destination/add/").content.decode()
    acl = page[page.index('name="s3__acl"'):]
    assert acl[:acl.index("</select>")].count("selected") == 1 and '<option value="" selected>' in acl

    form = {"client": client_row.pk, "name": "bucket", "kind": "s3", "s3__bucket": "feeds", "s3__acl": "",
            "s3__cred__access_key": "AKIA", "s3__cred__secret_key": "secret", "enabled": "on", "fast_retries": "5",
            "fence_reason": "", "subscriptions-TOTAL_FORMS": "0", "subscriptions-INITIAL_FORMS": "0"}
    assert admin_client.post("/admin/clients/destination/add/", form).status_code == 302
    assert "acl" not in Destination.objects.get(name="bucket").config


def _s3_form(client_row, **changes) -> dict:
    return {"client": client_row.pk, "name": "bucket", "kind": "s3", "s3__bucket": "feeds",
            "s3__role_session_name": "omnium", "s3__role_duration": "3600",
            "s3__cred__access_key": "AKIAVENDOR", "s3__cred__secret_key": "vendor-secret", "enabled": "on",
            "fast_retries": "5", "fence_reason": "", "subscriptions-TOTAL_FORMS": "0",
            "subscriptions-INITIAL_FORMS": "0", **changes}


def test_forgetting_the_stored_keys_leaves_an_s3_destination_to_the_workers_own_identity(
        admin_client, client_row):
    """Issue 33: a client's bucket reached through the worker's pod or instance role needs no keys
    with us; keys stored earlier can be dropped without pointing the destination elsewhere."""
    admin_client.post("/admin/clients/destination/add/", _s3_form(client_row))
    destination = Destination.objects.get()
    assert destination.credentials == {"access_key": "AKIAVENDOR", "secret_key": "vendor-secret"}

    reply = admin_client.post(f"/admin/clients/destination/{destination.pk}/change/", _s3_form(
        client_row, s3__cred__access_key="", s3__cred__secret_key="", forget_credentials="on"))

    assert reply.status_code == 302, reply.context["adminform"].form.errors
    destination.refresh_from_db()
    assert destination.credentials == {}


def test_forgetting_credentials_a_kind_requires_asks_for_new_ones(admin_client, client_row):
    admin_client.post("/admin/clients/destination/add/", _sftp_form(client_row))
    destination = Destination.objects.get()

    reply = admin_client.post(f"/admin/clients/destination/{destination.pk}/change/",
                              _sftp_form(client_row, sftp__cred__password="", forget_credentials="on"))

    assert reply.status_code == 200
    assert "password or private_key is required" in str(reply.context["adminform"].form.errors)
    destination.refresh_from_db()
    assert destination.credentials == {"password": "s3cret-pass"}


@pytest.mark.parametrize("changes, error", [
    ({"s3__cred__secret_key": ""}, "give the access key and its secret key together"),
    ({"s3__external_id": "games-2026"}, "give its role_arn too"),
    ({"s3__role_arn": "delivery"}, "must be a role ARN"),
    ({"s3__role_arn": "arn:aws:iam::123456789012:role/delivery", "s3__role_session_name": "a b"},
     "must be 2 to 64 letters"),
    ({"s3__cache_control_by_format": "json max-age=5"}, "line 1 must read"),
    ({"s3__content_type_by_format": "xml: not a type"}, "is not a media type"),
    ({"s3__cache_control": "max-age=5\r\nX-Evil: 1"}, "plain text on one line"),
])
def test_s3_settings_that_cannot_work_are_refused_with_the_reason(admin_client, client_row, changes, error):
    reply = admin_client.post("/admin/clients/destination/add/", _s3_form(client_row, **changes))

    assert reply.status_code == 200
    assert error in str(reply.context["adminform"].form.errors)
    assert not Destination.objects.exists()


def test_an_s3_role_and_per_format_headers_are_stored_as_typed(admin_client, client_row):
    reply = admin_client.post("/admin/clients/destination/add/", _s3_form(
        client_row, s3__role_arn="arn:aws:iam::123456789012:role/delivery", s3__external_id="games-2026",
        s3__cache_control_by_format="json: max-age=5\r\nxml: public, max-age=60"))

    assert reply.status_code == 302, reply.context["adminform"].form.errors
    config = Destination.objects.get().config
    assert config["role_arn"] == "arn:aws:iam::123456789012:role/delivery" and config["external_id"] == "games-2026"
    assert config["cache_control_by_format"].splitlines() == ["json: max-age=5", "xml: public, max-age=60"]


def test_credentials_can_be_a_reference_to_an_aws_secret_shown_as_such(admin_client, client_row):
    """Issue 40: the admin stores which secret to read, never its value, and says so on the page."""
    reply = admin_client.post("/admin/clients/destination/add/", _sftp_form(
        client_row, sftp__cred__password="", aws_secret="omnium/clients/sportstar-sftp",
        aws_secret_stage="AWSCURRENT"))

    assert reply.status_code == 302, reply.context["adminform"].form.errors
    destination = Destination.objects.get()
    assert destination.stored_credentials == {
        "aws_secret": {"id": "omnium/clients/sportstar-sftp", "stage": "AWSCURRENT"}}
    page = admin_client.get(f"/admin/clients/destination/{destination.pk}/change/").content.decode()
    assert "Read from AWS Secrets Manager: secret &#x27;omnium/clients/sportstar-sftp&#x27;" in page


def test_typed_credentials_and_a_secret_at_once_are_refused(admin_client, client_row):
    reply = admin_client.post("/admin/clients/destination/add/", _sftp_form(client_row, aws_secret="omnium/x"))

    assert reply.status_code == 200
    assert "Type the credentials or name a secret, not both." in str(reply.context["adminform"].form.errors)
