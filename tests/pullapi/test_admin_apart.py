"""The admin apart from the data plane: an API process serves no admin page and an admin process
no file (OMNIUM_SERVES), and admin sign-ins are throttled (django-axes), so that nothing done to
the admin can take a thread from a pull client. bench/pull.py floods the admin's sign-in beside
a wrk run of the API and prints both tails (login_flood_p99_ratio)."""

import pytest
import requests
from django.contrib.auth.models import User
from django.test import Client as HttpClient

from tests.pullapi.servers import ApiServer

PASSWORD = "a long enough password"


@pytest.fixture
def api_and_admin_processes(games):
    servers = [ApiServer("pull-api-only", OMNIUM_SERVES="api"), ApiServer("admin-only", OMNIUM_SERVES="admin")]
    yield servers
    for server in servers:
        server.stop()


@pytest.mark.servers
def test_an_api_process_serves_no_admin_and_an_admin_process_no_file(games, entitle, api_and_admin_processes):
    api, admin = api_and_admin_processes
    _, key = entitle("acme", games, "medals")
    feed = f"/v1/feeds/{games.code}/medals"
    headers = {"Authorization": f"Bearer {key}"}

    file = requests.get(api.url + feed, headers=headers)
    assert file.status_code == 200
    assert "Content-Security-Policy" not in file.headers  # JSON for programs: no policy to parse
    assert requests.get(api.url + "/admin/login/").status_code == 404
    assert requests.get(api.url + "/v1/docs").status_code == 404

    assert requests.get(admin.url + feed, headers=headers).status_code == 404
    sign_in = requests.get(admin.url + "/admin/login/")
    assert sign_in.status_code == 200
    assert "script-src 'self'" in sign_in.headers["Content-Security-Policy"]
    assert requests.get(admin.url + "/v1/schema", allow_redirects=False).status_code in (302, 403)

    for server in (api, admin):  # each probed and scraped on its own port
        assert requests.get(server.url + "/healthz").status_code == 200


@pytest.mark.django_db
def test_admin_sign_ins_stop_after_the_failure_limit_even_with_the_right_password(settings):
    User.objects.create_superuser("ops", "ops@example.org", PASSWORD)
    browser = HttpClient()
    answers = [browser.post("/admin/login/", {"username": "ops", "password": "wrong guess"}).status_code
               for _ in range(settings.AXES_FAILURE_LIMIT)]
    assert answers == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]  # the last failure locks

    refused = browser.post("/admin/login/", {"username": "ops", "password": PASSWORD})

    assert refused.status_code == 429
    assert not refused.wsgi_request.user.is_authenticated
    assert "_auth_user_id" not in browser.session


@pytest.mark.django_db
def test_a_user_name_guessed_from_many_addresses_is_locked_too(settings):
    User.objects.create_superuser("ops", "ops@example.org", PASSWORD)
    for n in range(settings.AXES_FAILURE_LIMIT):
        HttpClient(REMOTE_ADDR=f"203.0.113.{n + 1}").post("/admin/login/", {"username": "ops", "password": "guess"})

    refused = HttpClient(REMOTE_ADDR="198.51.100.7").post("/admin/login/", {"username": "ops", "password": PASSWORD})

    assert refused.status_code == 429


@pytest.mark.django_db
def test_a_sign_in_that_works_is_not_throttled():
    User.objects.create_superuser("ops", "ops@example.org", PASSWORD)
    browser = HttpClient()
    for _ in range(10):
        answer = browser.post("/admin/login/", {"username": "ops", "password": PASSWORD})
        assert answer.status_code == 302
        browser.logout()
