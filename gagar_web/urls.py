"""The site's URLconf: include()s of each app's own URLconf, plus auth, admin and the schema,
the error views (JSON under /api/, gagar_web/errors.py), and the pages both apps link to: the
group page and the blind comparisons (a run's timeline and a comparison's run link to them)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from gagar_web.login import admin_login, login_page
from reviews.views import comparisons, group

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="projects", permanent=False)),
    path("accounts/login/", login_page, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/login/", admin_login),  # before the admin's own: the same throttle as the login page
    path("admin/", admin.site.urls),
    path("api/v1/", include("grading.api.urls")),
    path("api/v1/", include("reviews.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("", include("grading.urls")),
    path("projects/<slug:project>/", include("reviews.urls")),
    # Blind comparisons: the review desk's views, named here because grading's pages link to them.
    path("projects/<slug:project>/comparisons/", comparisons.comparisons, name="comparisons"),
    path("projects/<slug:project>/comparisons/<str:name>/", comparisons.comparison, name="comparison"),
    # The group page: the review desk's view, named here, by the site, because both apps' pages
    # link to it (a step's groups and grading jobs, search hits). After reviews.urls: a group
    # uid may contain '/', so the routes under a group must match first.
    path("projects/<slug:project>/runs/<str:run>/groups/<path:uid>/", group.group_detail, name="group"),
]

handler400 = "gagar_web.errors.bad_request"
handler403 = "gagar_web.errors.permission_denied"
handler404 = "gagar_web.errors.page_not_found"
handler500 = "gagar_web.errors.server_error"
