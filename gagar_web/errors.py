"""Django's error views (handler400/403/404/500 in gagar_web/urls.py): JSON under /api/, Django's pages elsewhere.

DRF answers its own views' errors in JSON (grading/api/errors.py); these cover what never
reaches a DRF view: a URL no route matches, an exception DRF does not handle (a 500), and
refusals made by middleware.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

API_PREFIX = "/api/"


def wants_json(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def json_error(status: int, detail: str) -> JsonResponse:
    return JsonResponse({"detail": detail}, status=status)


def bad_request(request: HttpRequest, exception=None) -> HttpResponse:
    if wants_json(request):
        return json_error(400, "bad request")
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception=None) -> HttpResponse:
    if wants_json(request):
        return json_error(403, str(exception or "") or "You do not have permission to perform this action.")
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception=None) -> HttpResponse:
    if wants_json(request):
        return json_error(404, "Not found.")
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if wants_json(request):
        return json_error(500, "server error; the failure is logged")
    return defaults.server_error(request)
