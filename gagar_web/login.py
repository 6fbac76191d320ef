"""Sign-in with throttling, on the login page and the Django admin's alike: too many failed
sign-ins per username or per address pause both.

Each attempt is counted before its password is looked at (gagar_web/throttle.py: one atomic
step, shared by every web process); past GAGAR_LOGIN_MAX_FAILURES for a username within
GAGAR_LOGIN_WINDOW_SECONDS, or GAGAR_LOGIN_MAX_FAILURES_PER_ADDRESS from one address, the
attempt (even with the right password) is refused unchecked with `429`, `Retry-After` and a
message saying when to try again. So forty wrong passwords sent at once for one user check
five, not forty. A successful sign-in clears its username's count and takes itself back
from its address's, so only failures use up the budget.
"""

from __future__ import annotations

import ipaddress
import math
from functools import wraps

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.shortcuts import render

from gagar_web import throttle

DEFAULT_MAX_FAILURES = 5
DEFAULT_MAX_FAILURES_PER_ADDRESS = 20
DEFAULT_WINDOW_SECONDS = 15 * 60


def _limits() -> tuple[int, int, int]:
    return (
        getattr(settings, "GAGAR_LOGIN_MAX_FAILURES", DEFAULT_MAX_FAILURES),
        getattr(settings, "GAGAR_LOGIN_MAX_FAILURES_PER_ADDRESS", DEFAULT_MAX_FAILURES_PER_ADDRESS),
        getattr(settings, "GAGAR_LOGIN_WINDOW_SECONDS", DEFAULT_WINDOW_SECONDS),
    )


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR, or the X-Real-IP a trusted proxy set
    (GAGAR_TRUSTED_PROXIES); behind the shipped nginx every REMOTE_ADDR is the proxy's, and
    one budget for all clients would let anyone's failures pause everyone's sign-ins."""
    peer = request.META.get("REMOTE_ADDR", "") or "unknown"
    forwarded = request.META.get("HTTP_X_REAL_IP", "").strip()
    if forwarded and _trusted(peer):
        return forwarded[:64]
    return peer


def _trusted(peer: str) -> bool:
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in network for network in getattr(settings, "GAGAR_TRUSTED_PROXIES", ()))


def _keys(request) -> tuple[str, str]:
    username = str(request.POST.get("username", "")).strip().casefold()[:300]
    address = client_address(request)
    return throttle.key_for("login-user", username), throttle.key_for("login-address", address)


def _refused(request, wait: int):
    minutes = max(1, math.ceil(wait / 60))
    message = (
        f"Too many failed sign-ins for this username or from this address. "
        f"Try again in {minutes} minute{'s' if minutes != 1 else ''}."
    )
    context = {"form": AuthenticationForm(request), "throttled": message, "next": request.POST.get("next", "")}
    response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(wait)
    return response


def throttled(view):
    """`view`, a sign-in view, with every POST counted first and refused past the limits."""

    @wraps(view)
    def sign_in(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        per_user, per_address, window = _limits()
        user_key, address_key = _keys(request)
        hits = [(throttle.hit(user_key, window=window), per_user), (throttle.hit(address_key, window=window), per_address)]
        over = [h.retry_after for h, limit in hits if h.count > limit]
        if over:
            return _refused(request, max(over))
        response = view(request, *args, **kwargs)
        if response.status_code in (301, 302, 303) and request.user.is_authenticated:  # signed in
            throttle.forget(user_key)
            throttle.undo(address_key)
        return response

    return sign_in


login_page = throttled(auth_views.LoginView.as_view())
admin_login = throttled(admin.site.login)
