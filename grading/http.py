"""The request the pages get: Django's, with the `htmx` details django-htmx's middleware
(gagar_web.settings MIDDLEWARE) sets on every request. django-htmx leaves this type to the
project (its documentation's `HtmxHttpRequest`); views that read `request.htmx` take it."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails
