"""JSON errors for every API failure, including the ones Django would turn into HTML or a 500."""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from grading.formats.params import ParamError

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5


def exception_handler(exc, context):
    if isinstance(exc, ParamError):
        return error(status.HTTP_400_BAD_REQUEST, f"query parameter {exc}", field=exc.name)
    if isinstance(exc, RecursionError):
        # DRF's JSON parser lets this through as a 500 on deeply nested input.
        exc = exceptions.ParseError("JSON nested too deeply")
    if isinstance(exc, (OperationalError, InterfaceError)):
        # The database went away (restart, failover, dropped connection): nothing was
        # half-written, because every write is one transaction, so the client may retry.
        logger.warning("API request failed: database unavailable: %s", exc)
        return Response(
            {"detail": "database unavailable; retry the request shortly"},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, (Http404, PermissionDenied)) and isinstance(response.data, dict):
        response.data = {"detail": str(exc) or response.data.get("detail", "")}
    return response


def error(status: int, detail: str, **extra) -> Response:
    return Response({"detail": detail, **extra}, status=status)
