"""A file that cannot be built is an incident: one `build_failing` alert per file.

A resolver that crashes on one sport's data freezes that file for every client, push and
pull; the builders retry it every few seconds and log each failure, which no one reads. After
OMNIUM_BUILD_ALERT_AFTER_FAILURES failures in a row the file opens an alert naming the file,
its Games and the error; the next build that works resolves it. Other files keep building.
"""

from omnium.alerts.service import open_alert, resolve_alert
from omnium.conf import omnium_setting
from omnium.feeds.doc_keys import FileKey

KIND = "build_failing"
ERROR_LENGTH = 500


def error_text(exc: BaseException) -> str:
    """The exception in plain words: its class and message, cut short."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= ERROR_LENGTH else text[:ERROR_LENGTH - 1] + "…"


def failed(doc_key: str, failures_in_a_row: int, error: str) -> None:
    """A build of `doc_key` failed (the `failures_in_a_row`th): alert once it is the setting's."""
    if failures_in_a_row < omnium_setting("BUILD_ALERT_AFTER_FAILURES"):
        return
    games = _games_of(doc_key)
    open_alert(KIND, _subject(doc_key),
               f"{doc_key} cannot be built ({failures_in_a_row} tries in a row): {error}",
               doc_key=doc_key, games=games, error=error, failures=failures_in_a_row)


def built_again(doc_key: str) -> None:
    """The file built after failures: its alert, if one opened, is resolved."""
    resolve_alert(KIND, _subject(doc_key))


def _subject(doc_key: str) -> str:
    return f"file:{doc_key}"


def _games_of(doc_key: str) -> str:
    try:
        return FileKey.parse(doc_key).games_code
    except ValueError:
        return ""
