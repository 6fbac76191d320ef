"""Pages of the store, mounted at the site root by gagar_web/urls.py."""

from django.urls import path

from grading.views import checks, grading, guide, health, imports, pages, team, thresholds

RUN = "projects/<slug:project>/runs/<str:run>/"

urlpatterns = [
    path("healthz", pages.healthz, name="healthz"),
    path("accounts/invite/<uidb64>/<token>/", team.AcceptInviteView.as_view(), name="invite"),
    path("projects/", pages.project_list, name="projects"),
    path("projects/new/", pages.new_project, name="new-project"),  # before <slug:project>/: "new" is a reserved name
    path("projects/<slug:project>/", pages.project_detail, name="project"),
    path("projects/<slug:project>/guide/", guide.rubric_guide, name="rubric-guide"),
    path("projects/<slug:project>/checks/", checks.check_policy, name="check-policy"),
    path("projects/<slug:project>/health/", thresholds.health_thresholds_page, name="health-thresholds"),
    path("projects/<slug:project>/team/", team.team_page, name="team"),
    path("projects/<slug:project>/team/members/", team.add_member, name="team-add-member"),
    path("projects/<slug:project>/team/invites/", team.invite_member, name="team-invite"),
    path("projects/<slug:project>/team/members/<int:pk>/", team.change_member, name="team-member"),
    path("projects/<slug:project>/team/tokens/", team.create_token, name="team-create-token"),
    path("projects/<slug:project>/team/tokens/<int:pk>/revoke/", team.revoke_token, name="team-revoke-token"),
    path(RUN, pages.run_detail, name="run"),
    path(RUN + "steps/<int:step>/", pages.step_detail, name="step"),
    path(RUN + "steps/<int:step>/grading/", grading.step_grading, name="step-grading"),
    path(RUN + "imports/", imports.import_page, name="import-page"),
    path(RUN + "imports/jobs/", pages.run_imports, name="run-imports"),
    path(RUN + "policy/", pages.run_policy, name="run-policy"),
    path(RUN + "timeline/", health.run_timeline, name="run-timeline"),
]
