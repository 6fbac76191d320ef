"""Security headers that Django 5.2 does not set by itself, and a 503 (not a 500) when the database is gone."""

import logging

from django.conf import settings

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
        from django.http import HttpResponse

        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        logging.getLogger(__name__).warning("%s failed: database unavailable: %s", request.path, exception)
        response = HttpResponse(
            "The database is unavailable right now; nothing was changed. Retry in a few seconds.\n",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
        response["Retry-After"] = str(self.RETRY_AFTER_SECONDS)
        return response
