"""Attempt counts that every web process shares, counted atomically: add one first, then decide.

`hit(key, window=...)` adds one to `key` and returns the new count with the seconds left in
its window (which starts at the key's first hit), in one step no other request can come
between: forty requests at once get forty different counts, so past a limit of five the
other thirty-five are refused without being looked at. Reading the count and writing it
later, as before, let all forty read the same number.

Where the counts live: Django's cache when it is a Redis (`GAGAR_CACHE_URL`: `SET NX EX`,
`INCR`, `TTL` in one MULTI), otherwise a table of their own (grading.models.ThrottleCount:
`INSERT … ON CONFLICT DO UPDATE … RETURNING`, one statement on PostgreSQL and SQLite).
Never the process's memory, which would give each gunicorn worker its own budget, nor
Django's database cache, whose `incr` is a get and then a set.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.db import connection
from django.utils import timezone

from grading.models import ThrottleCount

if TYPE_CHECKING:
    from django.core.cache.backends.redis import RedisCacheClient
    from redis import Redis

_PREFIX = "gagar:throttle:"

# One statement: a new key, a key whose window ended (start again at 1) or one more.
_HIT_SQL = """
INSERT INTO grading_throttlecount ("key", "count", "expires_at") VALUES (%s, 1, %s)
ON CONFLICT ("key") DO UPDATE SET
    "count" = CASE WHEN grading_throttlecount."expires_at" <= %s THEN 1 ELSE grading_throttlecount."count" + 1 END,
    "expires_at" = CASE WHEN grading_throttlecount."expires_at" <= %s
                        THEN excluded."expires_at" ELSE grading_throttlecount."expires_at" END
RETURNING "count"
"""
_UNDO_SQL = 'UPDATE grading_throttlecount SET "count" = "count" - 1 WHERE "key" = %s AND "count" > 0'


@dataclass(frozen=True)
class Hit:
    count: int  # this hit's number in the window, itself included
    retry_after: int  # seconds until the window ends and the count starts again


def key_for(kind: str, value: str) -> str:
    return _PREFIX + kind + ":" + hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()


def _redis() -> tuple[RedisCache, Redis] | None:
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    # RedisCache._cache (its RedisCacheClient) is private, so django-stubs leaves it out.
    cache_client: RedisCacheClient = backend._cache  # type: ignore[attr-defined]
    return backend, cache_client.get_client(write=True)


def hit(key: str, *, window: int) -> Hit:
    redis = _redis()
    if redis is not None:
        backend, client = redis
        name = backend.make_key(key)
        with client.pipeline(transaction=True) as pipe:
            # One command a call: redis-py types a pipeline's commands as the client's, not as the pipeline.
            pipe.set(name, 0, ex=window, nx=True)
            pipe.incr(name)
            pipe.ttl(name)
            _, count, ttl = pipe.execute()
        return Hit(count=int(count), retry_after=max(1, int(ttl)))
    now = timezone.now()
    expires = now + timedelta(seconds=window)
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(_HIT_SQL, [key, adapt(expires), adapt(now), adapt(now)])
        count = cursor.fetchone()[0]
    if count == 1:  # a new window: ended ones of other keys go, so the table stays small
        ThrottleCount.objects.filter(expires_at__lt=now).exclude(key=key).delete()
        return Hit(count=1, retry_after=window)
    ends = ThrottleCount.objects.filter(key=key).values_list("expires_at", flat=True).first() or expires
    return Hit(count=count, retry_after=max(1, int((ends - now).total_seconds() + 0.999)))


def undo(key: str) -> None:
    """Take back one hit (an attempt that turned out not to count)."""
    redis = _redis()
    if redis is not None:
        backend, client = redis
        name = backend.make_key(key)
        if (client.decr(name) or 0) < 0:
            client.delete(name)
        return
    with connection.cursor() as cursor:
        cursor.execute(_UNDO_SQL, [key])


def forget(key: str) -> None:
    redis = _redis()
    if redis is not None:
        backend, client = redis
        client.delete(backend.make_key(key))
    else:
        ThrottleCount.objects.filter(key=key).delete()
