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
