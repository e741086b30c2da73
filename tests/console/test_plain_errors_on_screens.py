"""A real failed send reads as a plain sentence on the status screens and in the alert, with
the technical detail underneath."""

from devtools.processes import free_port
from omnium.alerts.models import Alert
from omnium.delivery.engine import backoff, sender
from omnium.delivery.models import SenderState
from tests.delivery.fixtures import webhook_settings

REFUSED = "Could not connect: the server refused the connection (wrong port, or the service is down)."


def test_a_refused_connection_reads_as_a_plain_sentence_on_screens_and_in_alerts(small_games, subscribe,
                                                                                 admin_client, clean_redis):
    destination = subscribe(small_games, webhook_settings(f"http://127.0.0.1:{free_port()}/feeds"),
                            feed_types=("medals",))

    assert sender.drain(destination.pk) == sender.Outcome.FAILED

    last_error = SenderState.objects.get(pk=destination.pk).last_error
    assert last_error.startswith(REFUSED + "\nTransportError host=127.0.0.1")
    overview = admin_client.get("/admin/delivery/status/").content.decode()
    client_page = admin_client.get(f"/admin/delivery/status/client/{destination.client_id}/").content.decode()
    assert REFUSED in overview and '<span class="technical">TransportError host=127.0.0.1' in overview
    assert f"retrying: {REFUSED}" in client_page
    for _ in range(backoff.ALERT_AFTER_FAILURES - 1):  # the alert opens on the third failure in a row
        backoff.failed(destination, last_error)
    assert REFUSED in Alert.objects.get(kind="destination_failing").message
