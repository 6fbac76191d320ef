"""The database as /healthz asks after it."""

from __future__ import annotations

from django.db import connection


def ping_database() -> None:
    """One round trip to the database, for /healthz: raises when it does not answer."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
