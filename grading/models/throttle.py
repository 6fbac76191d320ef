"""Attempt counts shared by every web process when no Redis is configured (gagar_web/throttle.py).

Django's database cache cannot hold them: its `incr` is a get, then a set, so forty requests
at once all read the same count. A row here is incremented by one statement
(`INSERT … ON CONFLICT DO UPDATE … RETURNING`), which PostgreSQL and SQLite run atomically.
"""

from __future__ import annotations

from django.db import models


class ThrottleCount(models.Model):
    key = models.CharField(max_length=200, primary_key=True)
    count = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.key}: {self.count} until {self.expires_at}"
