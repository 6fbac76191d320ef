"""Mounted at /api/v1/labeled-groups/ by `include("reviews.api_urls")`."""

from django.urls import path

from reviews.api import LabeledGroupExportView

urlpatterns = [
    path("", LabeledGroupExportView.as_view(), name="api-labeled-groups"),
]
