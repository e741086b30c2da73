"""A file that cannot be built is an incident: after a few failures in a row one alert names
the file and the error, the other files keep building, and the alert resolves once it builds."""

import time

from django.utils import timezone

from omnium.alerts.models import Alert
from omnium.feeds import build_alerts, debounce, tasks
from omnium.feeds.models import FeedDocument, PendingBuild
from omnium.feeds.resolvers import RESOLVERS
from omnium.routing import LIVE


def _build_until(done, seconds: float = 60.0):
    """The live lane's builds, in this process, as a builder runs them, until `done()`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        tasks.build_due(LIVE)
        if found := done():
            return found
        time.sleep(0.05)
    raise AssertionError("not done within the time a builder would have taken")


def test_a_file_that_cannot_be_built_opens_one_alert_and_resolves_when_it_builds(small_games, monkeypatch,
                                                                                  settings):
    settings.OMNIUM = {**settings.OMNIUM, "BUILD_ALERT_AFTER_FAILURES": 3}
    monkeypatch.setattr(tasks, "FAILED_RETRY_S", 0.1)  # retried at once, not every 5 s
    medals, calendar = f"{small_games.code}/medals", f"{small_games.code}/calendar"
    calendar_seq = FeedDocument.objects.get(doc_key=calendar).seq
    working_resolver = RESOLVERS["medals"]

    def crashing(games, filter):
        raise KeyError("discipline 'BMX freestyle' has no medal events")

    monkeypatch.setitem(RESOLVERS, "medals", crashing)
    debounce.note_changes([medals, calendar], timezone.now(), LIVE)
    started = time.monotonic()

    alert = _build_until(lambda: Alert.objects.filter(kind=build_alerts.KIND, resolved_at__isnull=True).first())

    assert time.monotonic() - started < 60
    assert alert.subject == f"file:{medals}"
    assert medals in alert.message and "KeyError" in alert.message and "BMX freestyle" in alert.message
    assert alert.details["games"] == small_games.code
    failing = PendingBuild.objects.get(doc_key=medals)
    assert failing.failed_builds >= 3 and "BMX freestyle" in failing.last_error
    assert FeedDocument.objects.get(doc_key=calendar).seq > calendar_seq or \
        not PendingBuild.objects.filter(doc_key=calendar).exists(), "the other file built meanwhile"
    _build_until(lambda: PendingBuild.objects.get(doc_key=medals).failed_builds >= 5)
    assert Alert.objects.filter(kind=build_alerts.KIND).count() == 1, "one alert, however many failures"

    monkeypatch.setitem(RESOLVERS, "medals", working_resolver)  # the fix is deployed

    _build_until(lambda: not PendingBuild.objects.filter(doc_key=medals).exists())
    assert Alert.objects.get(kind=build_alerts.KIND).resolved_at is not None


def test_a_build_that_fails_fewer_times_than_the_setting_opens_no_alert(small_games, monkeypatch, settings):
    settings.OMNIUM = {**settings.OMNIUM, "BUILD_ALERT_AFTER_FAILURES": 3}
    monkeypatch.setattr(tasks, "FAILED_RETRY_S", 0.1)
    medals = f"{small_games.code}/medals"
    working_resolver, calls = RESOLVERS["medals"], []

    def crashing_once(games, filter):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database went away for a moment")
        return working_resolver(games, filter)

    monkeypatch.setitem(RESOLVERS, "medals", crashing_once)
    debounce.note_changes([medals], timezone.now(), LIVE)

    _build_until(lambda: not PendingBuild.objects.filter(doc_key=medals).exists())

    assert len(calls) == 2 and not Alert.objects.filter(kind=build_alerts.KIND).exists()
