"""The Games records in the admin: shown to staff, changed only through the workflow."""

from omnium.games.models import Fixture, OutboxEntry


def test_a_fixture_is_shown_in_the_admin_but_cannot_be_changed_there(small_games, admin_client):
    fixture = Fixture.objects.filter(games=small_games).first()
    url = f"/admin/games/fixture/{fixture.pk}/change/"
    outbox_rows = OutboxEntry.objects.count()

    page = admin_client.get(url)
    refused = admin_client.post(url, {"venue": "Somewhere else", "status": "finished"})

    assert page.status_code == 200 and fixture.venue in page.content.decode()
    assert 'name="_save"' not in page.content.decode()
    assert refused.status_code == 403
    fixture.refresh_from_db()
    assert fixture.venue != "Somewhere else" and OutboxEntry.objects.count() == outbox_rows


def test_games_and_medal_events_cannot_be_added_or_deleted_in_the_admin(small_games, admin_client):
    event = small_games.medal_events.first()

    assert admin_client.get("/admin/games/games/add/").status_code == 403
    assert admin_client.post(f"/admin/games/medalevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    assert small_games.medal_events.filter(pk=event.pk).exists()


def a_failed_stat_job(games):
    from omnium.alerts.service import open_alert
    from omnium.games.models import StatJob

    job = StatJob.objects.create(games=games, stat="medal_standings", lane="live", state="failed", attempts=3,
                                 last_error="ArithmeticError: medal count does not add up")
    open_alert("stat_job_failed", "medal_standings:fixture=none", "failed 3 times")
    return job


def test_stat_jobs_are_read_only_in_the_admin(small_games, admin_client):
    job = a_failed_stat_job(small_games)

    refused = admin_client.post(f"/admin/games/statjob/{job.pk}/change/", {"state": "done", "attempts": 0})

    assert refused.status_code == 403
    job.refresh_from_db()
    assert (job.state, job.attempts) == ("failed", 3)


def test_a_failed_stat_job_runs_again_from_the_admin_and_its_alert_resolves(small_games, admin_client, clean_redis):
    from omnium.alerts.models import Alert
    from omnium.games import statjobs
    from omnium.games.models import StatJob

    failed = a_failed_stat_job(small_games)
    done = StatJob.objects.create(games=small_games, stat="medal_standings", lane="live", state="done", attempts=1)

    page = admin_client.post("/admin/games/statjob/", {"action": "run_again",
                                                       "_selected_action": [failed.pk, done.pk]}, follow=True)

    assert "1 failed job(s) will run again. 1 selected job(s) had not failed" in page.content.decode()
    failed.refresh_from_db()
    assert (failed.state, failed.attempts) == ("pending", 0)
    assert StatJob.objects.get(pk=done.pk).state == "done"
    assert statjobs.run(failed.pk) == "done"
    assert StatJob.objects.get(pk=failed.pk).last_error == ""
    assert not Alert.objects.filter(kind="stat_job_failed", resolved_at__isnull=True).exists()
