"""The one thread that fires every send's deadline."""

import multiprocessing
import threading
import time

from omnium.transports.watchdog import Watchdog


def test_deadlines_fire_in_time_order_and_a_cancelled_one_never_fires():
    watchdog, fired, done = Watchdog(), [], threading.Event()
    watchdog.watch(0.3, lambda: (fired.append("late"), done.set()))
    cancelled = watchdog.watch(0.1, lambda: fired.append("cancelled"))
    watchdog.watch(0.05, lambda: fired.append("early"))  # earlier than all: wakes the thread
    cancelled.cancel()

    assert done.wait(2)
    assert fired == ["early", "late"]


def test_a_deadline_fires_on_time_though_later_ones_wait():
    watchdog, fired_at = Watchdog(), []
    for seconds in (5.0, 6.0):
        watchdog.watch(seconds, lambda: None)
    started = time.monotonic()
    event = threading.Event()
    watchdog.watch(0.05, lambda: (fired_at.append(time.monotonic() - started), event.set()))

    assert event.wait(2)
    assert fired_at[0] < 0.5


def _fires_in_a_forked_child(watchdog, result):
    event = threading.Event()
    watchdog.watch(0.05, event.set)
    result.put(event.wait(2))


def test_a_forked_child_gets_a_thread_of_its_own():
    """Celery's prefork children are forks of a process whose watchdog thread did not follow."""
    watchdog = Watchdog()
    watchdog.watch(60, lambda: None)  # the parent's thread runs
    context = multiprocessing.get_context("fork")
    result = context.Queue()
    child = context.Process(target=_fires_in_a_forked_child, args=(watchdog, result))
    child.start()
    child.join(10)
    assert result.get(timeout=1) is True


def test_a_child_forked_while_the_watchdog_held_its_lock_is_not_stuck():
    """The watchdog's thread holds its lock for an instant at every wake-up; a fork in that
    instant must not leave the child a lock that no thread of its own will ever release."""
    watchdog = Watchdog()
    watchdog.watch(60, lambda: None)
    context = multiprocessing.get_context("fork")
    result = context.Queue()
    with watchdog._wake:  # as the parent's watchdog thread does when it wakes
        child = context.Process(target=_fires_in_a_forked_child, args=(watchdog, result))
        child.start()
    child.join(10)
    assert result.get(timeout=1) is True
