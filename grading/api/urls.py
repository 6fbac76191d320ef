"""The store's REST API, mounted at /api/v1/ by gagar_web/urls.py."""

from django.urls import include, path

from grading.api import future_history, graders, groups, health, imports, juries, runs, verdicts
from grading.api.advantages import advantage_export

urlpatterns = [
    path("graders/", graders.GraderListCreateView.as_view(), name="api-graders"),
    path("scanners/future-history/", future_history.FutureHistoryView.as_view(), name="api-future-history"),
    path("health-thresholds/", health.HealthThresholdsView.as_view(), name="api-health-thresholds"),
    path("groups/", groups.GroupListIngestView.as_view(), name="api-groups"),
    path("groups/<path:uid>/", groups.GroupDetailView.as_view(), name="api-group"),
    path("imports/", imports.ImportListCreateView.as_view(), name="api-imports"),
    path("imports/<int:pk>/", imports.ImportDetailView.as_view(), name="api-import"),
    path("advantages/", advantage_export, name="api-advantages"),
    path("juries/", juries.JuryListCreateView.as_view(), name="api-juries"),
    path("mappings/", include("grading.api.mappings")),
    path("runs/", runs.RunListCreateView.as_view(), name="api-runs"),
    path("runs/<str:name>/", runs.RunDetailView.as_view(), name="api-run"),
    path("runs/<str:name>/metrics/", runs.RunMetricsView.as_view(), name="api-run-metrics"),
    path("steps/<int:number>/", runs.StepStatusView.as_view(), name="api-step"),
    path("steps/<int:number>/grade/", runs.StepGradeView.as_view(), name="api-step-grade"),
    path("verdicts/", verdicts.VerdictPostView.as_view(), name="api-verdicts"),
]
