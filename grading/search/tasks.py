"""Celery task of the search index: thin, it calls one service (imported in the body)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="grading.search_index_backlog")
def index_backlog_task() -> int:
    from grading.search.index import index_backlog

    return index_backlog()
