from config.heap import heaps_shared

heaps_shared()  # every process of the service imports this package first, before it starts any thread

from config.celery import app as celery_app  # noqa: E402 (after the heaps are set)

__all__ = ["celery_app"]
