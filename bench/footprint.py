"""What each destination costs at rest: RabbitMQ memory (its queue and consumer), PostgreSQL
rows and bytes (tables with their indexes), for bench/scale.py's capacity numbers.

RabbitMQ's management API refreshes its statistics every 5 s (collect_statistics_interval),
so a reading waits until every destination queue is listed with its consumer.
"""

from django.conf import settings
from django.db import connection

from devtools import broker
from devtools.waiting import wait_until

# Every table that grows with destinations, subscriptions or files owed.
TABLES = ("clients_destination", "clients_subscription", "delivery_state", "delivery_senderstate",
          "delivery_deliveryattempt")


def broker_footprint(broker_url: str, destinations: int) -> dict:
    """The destination queues of the vhost, their memory and consumers, and the nodes' memory."""
    management = settings.CELERY_BROKER_MANAGEMENT_URL

    def listed():
        queues = [q for q in broker.vhost_listing(management, broker_url, "queues") if q["name"].startswith("deliver.")
                  and q["name"] != "deliver.control"]
        ready = len(queues) >= destinations and all("memory" in q and q.get("consumers", 0) for q in queues)
        return queues if ready else None

    queues = wait_until(listed, 120, interval=1.0, message="every destination queue listed with its consumer")
    return {"queues": len(queues), "queue_memory_bytes": sum(q["memory"] for q in queues),
            "consumers": sum(q["consumers"] for q in queues),
            "node_memory_bytes": broker.node_memory_bytes(management),
            "each_node_memory_bytes": {node["name"]: node.get("mem_used", 0) for node in broker.cluster_nodes(management)}}


def database_footprint() -> dict:
    """Rows and bytes (with indexes and TOAST) of each table that grows with destinations."""
    footprint = {}
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"SELECT count(*), pg_total_relation_size('{table}'), pg_indexes_size('{table}') FROM {table}")
            rows, total, indexes = cursor.fetchone()
            footprint[table] = {"rows": rows, "bytes": total, "index_bytes": indexes}
    return footprint


def per_destination(at_rest: dict, baseline_node_bytes: int, destinations: int) -> dict:
    """The costs above, divided by the number of destinations."""
    database = at_rest["database"]
    return {
        "broker_queue_bytes": round(at_rest["broker"]["queue_memory_bytes"] / destinations),
        "broker_node_bytes": round((at_rest["broker"]["node_memory_bytes"] - baseline_node_bytes) / destinations),
        "database_bytes": round(sum(t["bytes"] for t in database.values()) / destinations),
        "database_rows": round(sum(t["rows"] for t in database.values()) / destinations, 1),
    }
