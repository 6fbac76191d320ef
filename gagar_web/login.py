"""The login page with throttling: too many failed sign-ins per username or per address pause it.

Counts live in Django's cache (local memory by default, shared when CACHES names Redis):
after GAGAR_LOGIN_MAX_FAILURES failures for a username within GAGAR_LOGIN_WINDOW_SECONDS,
or GAGAR_LOGIN_MAX_FAILURES_PER_ADDRESS from one address, every attempt for it (even with
the right password) is refused with a message saying when to try again; the page answers
429. A successful sign-in clears its username's count.
"""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.cache import cache

DEFAULT_MAX_FAILURES = 5
DEFAULT_MAX_FAILURES_PER_ADDRESS = 20
DEFAULT_WINDOW_SECONDS = 15 * 60


def _limits() -> tuple[int, int, int]:
    return (getattr(settings, "GAGAR_LOGIN_MAX_FAILURES", DEFAULT_MAX_FAILURES),
            getattr(settings, "GAGAR_LOGIN_MAX_FAILURES_PER_ADDRESS", DEFAULT_MAX_FAILURES_PER_ADDRESS),
            getattr(settings, "GAGAR_LOGIN_WINDOW_SECONDS", DEFAULT_WINDOW_SECONDS))


def _key(kind: str, value: str) -> str:
    return "gagar:login-failures:" + kind + ":" + hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()


def _keys(request) -> list[tuple[str, int]]:
    per_user, per_address, _ = _limits()
    username = str(request.POST.get("username", "")).strip().casefold()[:300]
    address = request.META.get("REMOTE_ADDR", "") or "unknown"
    return [(_key("user", username), per_user), (_key("address", address), per_address)]


def _blocked_for(request) -> int:
    """Seconds until this username and address may try again; 0 when they may now."""
    now = time.time()
    wait = 0.0
    for key, limit in _keys(request):
        failures = cache.get(key) or []
        if len(failures) >= limit:
            wait = max(wait, failures[-limit] + _limits()[2] - now)
    return math.ceil(wait) if wait > 0 else 0


def _record_failure(request) -> None:
    now = time.time()
    window = _limits()[2]
    for key, limit in _keys(request):
        recent = [t for t in (cache.get(key) or []) if t > now - window][-limit:]
        cache.set(key, [*recent, now], timeout=window)


class ThrottledLoginView(auth_views.LoginView):
    def post(self, request, *args, **kwargs):
        wait = _blocked_for(request)
        if wait:
            form = self.get_form()
            minutes = max(1, math.ceil(wait / 60))
            message = (f"Too many failed sign-ins for this username or from this address. "
                       f"Try again in {minutes} minute{'s' if minutes != 1 else ''}.")
            response = self.render_to_response(self.get_context_data(form=form, throttled=message))
            response.status_code = 429
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        _record_failure(self.request)
        return super().form_invalid(form)

    def form_valid(self, form):
        cache.delete(_keys(self.request)[0][0])
        return super().form_valid(form)
