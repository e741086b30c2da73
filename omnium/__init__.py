"""Omnium: saved sports records in, feed files out, delivered by push and pull."""

from omnium.celery import app as celery_app

__all__ = ["celery_app"]
