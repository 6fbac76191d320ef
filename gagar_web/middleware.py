"""Security headers that Django 5.2 does not set by itself, `Cache-Control: private, no-store` on
what a signed-in person (or a token) gets, a NUL in a URL refused before any view, and a 503
(not a 500) when the database is gone."""

import logging

from django.conf import settings
from django.http import HttpResponse
from django.utils.cache import patch_cache_control

from gagar_web.errors import database_unavailable, json_error, wants_json

# Enforced, not report-only. No inline script or style anywhere: htmx is configured
# without eval and without its injected indicator styles (see templates/base.html).
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.policy = getattr(settings, "CONTENT_SECURITY_POLICY", CONTENT_SECURITY_POLICY)

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", self.policy)
        response.headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
        return response


class NulRefusalMiddleware:
    """A NUL in the path or the query is refused here: no name, uid or cursor holds one, and
    PostgreSQL refuses it in text, which would otherwise surface as a 500 in whichever view
    passes it to a query. A path gets 404 (nothing is at it), a query 400; JSON under /api/."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path:
            return _refusal(request, 404, "Not found: the path contains a NUL character")
        query = request.META.get("QUERY_STRING", "")
        if "%00" in query or "\x00" in query:
            return _refusal(request, 400, "a query parameter contains a NUL character")
        return self.get_response(request)


def _refusal(request, status: int, detail: str) -> HttpResponse:
    if wants_json(request):
        return json_error(status, detail)
    return HttpResponse(f"{detail}\n", status=status, content_type="text/plain; charset=utf-8")


class PrivateCacheMiddleware:
    """`Cache-Control: private, no-store` on every answer to a signed-in person or a request
    carrying credentials (an API token): private pages and exports stay out of shared and
    browser caches. Static files and anonymous pages are left as they are."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        # Credentials first: they need no query, and asking for the user may need the database
        # (the session), which on a 503 is what failed.
        if request.META.get("HTTP_AUTHORIZATION") or request.COOKIES.get(settings.SESSION_COOKIE_NAME) or _signed_in(request):
            patch_cache_control(response, private=True, no_store=True)
        return response


def _signed_in(request) -> bool:
    user = getattr(request, "user", None)
    return user is not None and user.is_authenticated


class DatabaseUnavailableMiddleware:
    """A page whose database went away answers 503 with Retry-After, not a 500.

    Nothing is half-written (writes are transactions), so retrying is safe; the API's own
    exception handler does the same for API views (grading/api/errors.py).
    """

    RETRY_AFTER_SECONDS = 5

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        from django.db import InterfaceError, OperationalError

        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        logging.getLogger(__name__).warning("%s failed: database unavailable: %s", request.path, exception)
        if wants_json(request):
            response = json_error(503, "The database is unavailable right now; nothing was changed. Retry in a few seconds.")
            response["Retry-After"] = str(self.RETRY_AFTER_SECONDS)
            return response
        return database_unavailable(request, self.RETRY_AFTER_SECONDS)
