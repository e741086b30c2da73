#!/usr/bin/env python
"""The two forms a destination's queue can take on a three-node RabbitMQ cluster, measured
side by side (docs/decisions/007-broker-cluster.md). Prints a JSON object per form.

  transient   Omnium's: a classic queue that is not durable, on the node of whoever declared
              it; a cluster forgets it when that node goes, and the consumer's next
              declaration makes it again on a node that is up (its kicks re-made from
              PostgreSQL by the sweeper)
  quorum      replicated on all three nodes (Raft); its leader moves to a surviving node

For each form, a cluster of its own, and for each count of destinations (500, then 5,000):
the queues declared and consumed as a delivery worker does (one connection, a consumer per
queue, prefetch 2), then

  node_memory_mb        each node's memory at rest (the management API's mem_used)
  idle_cpu_ms_per_s     each node's CPU time a second, at rest, over 10 s
  fanout_s              one kick published to every queue -> every kick consumed
  fanout_cpu_ms         each node's CPU time over that fan-out
  recover_s             (5,000 only) kill -9 the node where the queues live -> a kick
                        published to every queue again and consumed, the consumer
                        re-declaring what the cluster forgot, as a delivery worker does
                        (null, with the queues that had, if not all within 300 s)

The kicks are what Omnium sends: transient messages (which a quorum queue keeps on disk all
the same). Usage: .venv/bin/python bench/broker_queues.py [--counts 500,5000]
"""

import argparse
import json
import socket
import sys
import time
from pathlib import Path

import kombu
from amqp.exceptions import ConsumerCancelled, NotFound

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.process_cpu import cpu_by_process  # noqa: E402
from devtools.broker import cluster_nodes  # noqa: E402
from devtools.broker_cluster import BrokerCluster  # noqa: E402
from devtools.processes import ROOT  # noqa: E402

LOG_DIR = ROOT / "var" / "logs" / "broker-queues"
PREFETCH_PER_QUEUE = 2  # as omnium.delivery.worker.kick_consumer
# py-amqp drops a connection whose sent bytes wait unacknowledged for a second
# (TCP_USER_TIMEOUT 1000 ms). Three nodes on a 2-core machine, taking 5,000 declarations or
# kicks, stop reading a client's socket for longer than that (credit flow), and the first run
# lost its publishing connection mid-fan-out (ETIMEDOUT). The bench measures the queues, not
# that limit: its connections wait 30 s.
PATIENT_SOCKET = {"socket_settings": {socket.TCP_USER_TIMEOUT: 30_000}}
SWEEP_S = 2.0  # OMNIUM_SWEEP_INTERVAL_S's default
# What a consumer meets when a node is lost: its connection closed, its consumers cancelled,
# a queue gone between its declaration and its consume.
QUEUES_LOST = (ConsumerCancelled, NotFound, *kombu.Connection("amqp://").recoverable_connection_errors)
FORMS = {
    "transient": lambda name: kombu.Queue(name, kombu.Exchange(name, "direct"), name, durable=False),
    "quorum": lambda name: kombu.Queue(name, kombu.Exchange(name, "direct"), name, durable=True,
                                       queue_arguments={"x-queue-type": "quorum"}),
}


class KickConsumer:
    """One connection consuming every queue, as a delivery worker; re-declares and consumes
    again when the broker cancels its consumers (a queue's node went down)."""

    def __init__(self, urls: str, queues: list):
        self.urls, self.queues, self.received, self.names = urls, queues, 0, set()
        self.connection = self.consumer = None
        self.connect()

    def connect(self, tries: int = 50) -> None:
        """Consume every queue, declaring each; tried again while the cluster is still
        forgetting a lost node's queues (a declaration that found the queue it was about to
        forget, then a consume that no longer does: 404), as Celery's channel-error retry does."""
        for _ in range(tries - 1):
            try:
                return self._connect()
            except QUEUES_LOST:
                time.sleep(0.2)
        self._connect()

    def _connect(self) -> None:
        if self.connection is not None:
            self.connection.release()
        self.connection = kombu.Connection(self.urls, failover_strategy="round-robin",
                                           transport_options=PATIENT_SOCKET)
        self.connection.ensure_connection(max_retries=20, interval_start=0, interval_step=0.5, interval_max=1)
        channel = self.connection.channel()
        channel.basic_qos(0, PREFETCH_PER_QUEUE, False)
        self.consumer = kombu.Consumer(channel, queues=[], callbacks=[self.on_kick], auto_declare=False)
        for queue in self.queues:
            bound = queue(channel)
            bound.declare(nowait=True)
            self.consumer.add_queue(bound)
        self.consumer.consume()

    def on_kick(self, body, message) -> None:
        self.received += 1
        self.names.add(message.delivery_info["routing_key"])
        message.ack()

    def drain_until(self, count: int, timeout: float, every_s: float = 0.5, each_round=lambda: None) -> None:
        """Consume until `count` kicks in all; `each_round()` after each wait of `every_s`."""
        end = time.monotonic() + timeout
        while self.received < count:
            if time.monotonic() > end:
                raise TimeoutError(f"{self.received} of {count} kicks consumed within {timeout} s")
            each_round()
            try:
                self.connection.drain_events(timeout=every_s)
            except TimeoutError:
                continue
            except QUEUES_LOST:
                time.sleep(0.2)  # the cluster forgetting the lost node's queues
                self.connect()


def publish_kicks(urls: str, queues: list) -> None:
    """One transient kick to each queue; a kick that comes back (its queue forgotten with its
    node) is published again after declaring the queue, as omnium.delivery.kicks does."""
    with kombu.Connection(urls, transport_options=PATIENT_SOCKET) as connection:
        connection.ensure_connection(max_retries=20, interval_start=0, interval_step=0.5, interval_max=1)
        channel = connection.channel()
        returned = []
        channel.events["basic_return"].add(lambda exc, exchange, routing_key, message: returned.append(routing_key))
        producer = kombu.Producer(channel)
        by_name = {queue.name: queue for queue in queues}
        for queue in queues:
            producer.publish(1, exchange="", routing_key=queue.name, delivery_mode=1, mandatory=True)
        channel.basic_qos(0, 0, False)  # a round trip: every return has come back by its answer
        for name in returned:
            by_name[name](channel).declare(nowait=True)  # as omnium.delivery.kicks
            producer.publish(1, exchange="", routing_key=name, delivery_mode=1)
        channel.basic_qos(0, 0, False)


def nodes_memory_mb(cluster) -> dict:
    return {node["name"]: round(node.get("mem_used", 0) / 2**20, 1)
            for node in cluster_nodes(cluster.management_url()) if node.get("running")}


def nodes_cpu(cluster) -> dict:
    return {node.name: cpu for node in cluster.nodes if node.running()
            for cpu in cpu_by_process([node.beam_pid()]).values()}


def cpu_ms_since(before: dict, after: dict, seconds: float = 1.0) -> dict:
    return {name: round((after[name] - before[name]) * 1000 / seconds, 1) for name in after if name in before}


def measure_form(form: str, counts: list[int]) -> dict:
    cluster = BrokerCluster(f"bench-{form}", log_dir=LOG_DIR)
    try:
        urls, results, queues, consumer = cluster.urls(), {}, [], None
        for count in counts:
            # a new list: the consumer holds the last one, and compares lengths
            queues = queues + [FORMS[form](f"deliver.{n}") for n in range(len(queues), count)]
            started = time.monotonic()
            consumer = KickConsumer(urls, queues) if consumer is None else consumer
            if len(consumer.queues) != len(queues):
                consumer.queues = queues
                consumer.connect()
            declared_s = time.monotonic() - started
            time.sleep(5)
            idle_before = nodes_cpu(cluster)
            time.sleep(10)
            idle = cpu_ms_since(idle_before, nodes_cpu(cluster), 10)
            memory = nodes_memory_mb(cluster)
            cpu_before, started = nodes_cpu(cluster), time.monotonic()
            publish_kicks(urls, queues)
            consumer.drain_until(consumer.received + len(queues), 300)
            fanout_s = time.monotonic() - started
            results[count] = {"declare_and_consume_s": round(declared_s, 2), "node_memory_mb": memory,
                              "idle_cpu_ms_per_s": idle, "fanout_s": round(fanout_s, 2),
                              "fanout_cpu_ms": cpu_ms_since(cpu_before, nodes_cpu(cluster))}
        results[counts[-1]].update(recover(cluster, urls, queues, consumer))
        return results
    finally:
        cluster.stop()


def recover(cluster, urls: str, queues: list, consumer: KickConsumer) -> dict:
    """Kill the node holding the queues (or their leaders); then, as Omnium's sweeper does
    every SWEEP_INTERVAL_S, kick again each queue that has not delivered a kick since, until
    all have."""
    doomed = cluster.node_with_most_queues(cluster.nodes[0].url())
    surviving = ";".join(node.url() for node in cluster.nodes if node is not doomed)
    consumer.urls = surviving
    consumer.connect()  # on a node that stays: the kill measures the queues alone
    consumer.names.clear()
    last_round = [0.0]

    def sweep():
        if time.monotonic() - last_round[0] >= SWEEP_S:
            last_round[0] = time.monotonic()
            publish_kicks(surviving, [queue for queue in queues if queue.name not in consumer.names])

    started = time.monotonic()
    doomed.kill()
    end = started + 300
    while len(consumer.names) < len(queues):
        if time.monotonic() > end:  # a result too: the form did not recover in time
            return {"recover_s": None, "queues_recovered_in_300_s": len(consumer.names)}
        try:
            consumer.drain_until(consumer.received + 1, end - time.monotonic(), each_round=sweep)
        except TimeoutError:
            continue
    return {"recover_s": round(time.monotonic() - started, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", default="500,5000")
    parser.add_argument("--forms", default=",".join(FORMS))
    args = parser.parse_args()
    counts = sorted(int(count) for count in args.counts.split(","))
    for form in args.forms.split(","):  # each form's numbers as soon as it is measured
        print(json.dumps({form: measure_form(form, counts)}, indent=2), flush=True)


if __name__ == "__main__":
    main()
