from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from grading.api import imports as imports_api
from grading.api import views as api
from grading.api.advantages import AdvantageExportView
from grading import views as pages
from grading import views_grading
from reviews.api_agreement import AgreementView

api_v1 = [
    path("groups/", api.GroupListIngestView.as_view(), name="api-groups"),
    path("groups/<path:uid>/", api.GroupDetailView.as_view(), name="api-group"),
    path("imports/", imports_api.ImportListCreateView.as_view(), name="api-imports"),
    path("imports/<int:pk>/", imports_api.ImportDetailView.as_view(), name="api-import"),
    path("advantages/", AdvantageExportView.as_view(), name="api-advantages"),
    path("mappings/", include("grading.api.mappings")),
    path("agreement/", AgreementView.as_view(), name="api-agreement"),
    path("labeled-groups/", include("reviews.api_urls")),
]

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="projects", permanent=False)),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("healthz", pages.healthz, name="healthz"),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("projects/", pages.project_list, name="projects"),
    path("projects/<slug:project>/", pages.project_detail, name="project"),
    path("projects/<slug:project>/runs/<str:run>/", pages.run_detail, name="run"),
    path("projects/<slug:project>/runs/<str:run>/steps/<int:step>/", pages.step_detail, name="step"),
    path("projects/<slug:project>/runs/<str:run>/steps/<int:step>/grading/", views_grading.step_grading, name="step-grading"),
    path("projects/<slug:project>/runs/<str:run>/imports/", pages.run_imports, name="run-imports"),
    path("projects/<slug:project>/", include("reviews.urls")),
    # Group uids may contain '/', so the rollout partials come before the catch-all group page.
    path(
        "projects/<slug:project>/runs/<str:run>/groups/<path:uid>/rollouts/<int:index>/turns/",
        pages.rollout_turns,
        name="rollout-turns",
    ),
    path(
        "projects/<slug:project>/runs/<str:run>/groups/<path:uid>/rollouts/<int:index>/diff/",
        pages.rollout_diff,
        name="rollout-diff",
    ),
    path(
        "projects/<slug:project>/runs/<str:run>/groups/<path:uid>/rollouts/<int:index>/log/",
        pages.rollout_log,
        name="rollout-log",
    ),
    path("projects/<slug:project>/runs/<str:run>/groups/<path:uid>/", pages.group_detail, name="group"),
]
