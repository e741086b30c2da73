"""A delivery worker's consumer connection reads ahead (delivery.kick_reading), on RabbitMQ."""

import socket
import time

import kombu
import pytest
from celery import current_app

from omnium.delivery import kick_reading

QUEUE = "omnium-test-kick-reading"


@pytest.fixture
def consumer_connection():
    with kombu.Connection(current_app.conf.broker_url) as connection:
        connection.default_channel.queue_declare(QUEUE, auto_delete=True)
        connection.default_channel.queue_purge(QUEUE)
        yield connection


def _publish(count: int) -> None:
    with kombu.Connection(current_app.conf.broker_url) as connection:
        producer = connection.Producer()
        for n in range(count):
            producer.publish({"n": n}, exchange="", routing_key=QUEUE, delivery_mode=1)


def _receives(transport) -> list[int]:
    """Count the socket receives of a py-amqp transport from now on (sizes asked)."""
    asked, receive = [], transport._quick_recv
    transport._quick_recv = lambda size: asked.append(size) or receive(size)
    return asked


def _late_first_receive(transport, delay_s: float = 0.5) -> None:
    """The next receive of a py-amqp transport happens `delay_s` late."""
    receive, late = transport._quick_recv, [True]

    def receive_late_once(size):
        if late:
            late.clear()
            time.sleep(delay_s)
        return receive(size)

    transport._quick_recv = receive_late_once


def test_messages_already_received_are_all_taken_in_one_read_of_the_event_loop(consumer_connection):
    """Fifty messages waiting on the socket: one drain_events call takes them all, in order,
    with a few receives of many frames each (py-amqp alone: one message a call, and three
    receives a frame, nine a message)."""
    amqp_connection = consumer_connection.connection
    assert kick_reading.read_ahead(amqp_connection)
    asked = _receives(amqp_connection.transport)
    received = []
    consumer = kombu.Consumer(consumer_connection.default_channel, [kombu.Queue(QUEUE, no_declare=True)],
                              callbacks=[lambda body, message: (received.append(body["n"]), message.ack())])
    consumer.qos(prefetch_count=100)
    consumer.consume()
    _publish(50)
    time.sleep(1)  # every message on its way to this socket

    consumer_connection.drain_events(timeout=0)  # as kombu's event loop reads when the socket is readable

    assert received == list(range(50))
    assert 1 <= len(asked) <= 10, asked  # 150 frames
    with pytest.raises(socket.timeout):
        consumer_connection.drain_events(timeout=0)  # nothing left behind in the buffer


def test_a_frame_split_across_receives_is_put_together(consumer_connection):
    """Receives of a few bytes at a time, so frames arrive in pieces: every message still
    comes whole."""
    amqp_connection = consumer_connection.connection
    kick_reading.read_ahead(amqp_connection)
    transport = amqp_connection.transport
    transport._quick_recv = lambda size: transport.sock.recv(5)  # what a slow network might hand over
    received = []
    consumer = kombu.Consumer(consumer_connection.default_channel, [kombu.Queue(QUEUE, no_declare=True)],
                              callbacks=[lambda body, message: (received.append(body["n"]), message.ack())])
    consumer.consume()
    _publish(10)

    deadline = time.monotonic() + 10
    while len(received) < 10 and time.monotonic() < deadline:
        try:
            consumer_connection.drain_events(timeout=0.5)
        except TimeoutError:
            pass
    assert received == list(range(10))


def test_an_unknown_transport_is_left_as_it_is():
    class OtherTransport:
        pass

    class OtherConnection:
        transport = OtherTransport()

    assert not kick_reading.read_ahead(OtherConnection())


def test_messages_right_behind_a_consumers_start_reach_that_consumer(consumer_connection):
    """RabbitMQ sends a queue's waiting messages right behind the reply that starts their
    consumer, often in the same receive. Read ahead inside that wait, they would be handed to
    the channel before py-amqp has registered the consumer: rejected as having no callback
    (and on a channel without acknowledgements, such as Celery's control channel, the reject
    is an error that closed the worker's connection: a delivery worker died at its start)."""
    _publish(20)
    amqp_connection = consumer_connection.connection
    _late_first_receive(amqp_connection.transport)  # a busy worker: the reply and the messages wait together
    assert kick_reading.read_ahead(amqp_connection)
    received = []
    consumer = kombu.Consumer(consumer_connection.default_channel, [kombu.Queue(QUEUE, no_declare=True)],
                              callbacks=[lambda body, message: (received.append(body["n"]), message.ack())])
    consumer.qos(prefetch_count=100)

    consumer.consume()  # waits for its reply; the messages follow it on the socket
    deadline = time.monotonic() + 5
    while len(received) < 20 and time.monotonic() < deadline:
        try:
            consumer_connection.drain_events(timeout=0.2)
        except TimeoutError:
            pass

    assert received == list(range(20))
