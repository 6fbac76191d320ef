"""Django's error views (handler400/403/404/500 in gagar_web/urls.py) and the 503 the
database middleware answers: JSON under /api/, the app's styled pages elsewhere.

DRF answers its own views' errors in JSON (grading/api/errors.py); these cover what never
reaches a DRF view: a URL no route matches, an exception DRF does not handle (a 500), and
refusals made by middleware. Each page says what happened and offers a way back
(templates/error.html). The 500 and 503 pages are rendered without the request's context:
no user, no session, nothing that could need the database that may be what failed.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.template import loader

API_PREFIX = "/api/"


def wants_json(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def json_error(status: int, detail: str) -> JsonResponse:
    return JsonResponse({"detail": detail}, status=status)


def _project_name(request: HttpRequest) -> str | None:
    """The project the refused page belongs to, when the URL named one (for a way back)."""
    match = getattr(request, "resolver_match", None)
    name = match.kwargs.get("project") if match is not None else None
    return name if isinstance(name, str) else None


def _detail(exception) -> str:
    args = getattr(exception, "args", ())
    return args[0] if args and isinstance(args[0], str) else ""


def bad_request(request: HttpRequest, exception=None) -> HttpResponse:
    if wants_json(request):
        return json_error(400, "bad request")
    return HttpResponse(loader.render_to_string("400.html", {}), status=400)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a form sent without a valid token (a page left open across a
    sign-out, cookies cleared) gets the styled 403 that says so, not Django's bare page."""
    if wants_json(request):
        return json_error(403, f"CSRF check failed: {reason}" if reason else "CSRF check failed")
    context = {
        "detail": "The form's security token (CSRF) is missing or out of date (signed out meanwhile, or cookies cleared?); "
        "reload the page and send it again",
        "project_name": _project_name(request),
        "csrf": True,
    }
    return HttpResponse(loader.render_to_string("403.html", context, request), status=403)


def permission_denied(request: HttpRequest, exception=None) -> HttpResponse:
    if wants_json(request):
        return json_error(403, str(exception or "") or "You do not have permission to perform this action.")
    context = {"detail": _detail(exception), "project_name": _project_name(request)}
    return HttpResponse(loader.render_to_string("403.html", context, request), status=403)


def page_not_found(request: HttpRequest, exception=None) -> HttpResponse:
    if wants_json(request):
        return json_error(404, "Not found.")
    context = {"detail": _detail(exception), "request_path": request.path}
    return HttpResponse(loader.render_to_string("404.html", context, request), status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    if wants_json(request):
        return json_error(500, "server error; the failure is logged")
    return HttpResponse(loader.render_to_string("500.html", {}), status=500)


def database_unavailable(request: HttpRequest, retry_after: int) -> HttpResponse:
    """The styled 503 (gagar_web/middleware.py DatabaseUnavailableMiddleware) for a page request.

    A GET offers to load the page again (and reloads itself after `retry_after` seconds); a
    form post offers to send the same fields again, with a fresh CSRF token (from the cookie,
    not the session), unless it carried files, which a page cannot send again by itself.
    """
    context: dict = {"retry_after": retry_after, "path": request.path, "retry_url": None, "fields": None}
    if request.method in ("GET", "HEAD"):
        context["retry_url"] = request.get_full_path()
    elif request.method == "POST" and not request.FILES:
        context["csrf_token"] = get_token(request)
        context["fields"] = [
            (name, value) for name, values in request.POST.lists() if name != "csrfmiddlewaretoken" for value in values
        ]
    response = HttpResponse(loader.render_to_string("503.html", context), status=503)
    response["Retry-After"] = str(retry_after)
    return response
