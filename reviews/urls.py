"""The review desk's pages, mounted under /projects/<project>/ by gagar_web/urls.py.

Group uids may contain '/', so every route under a group comes before the group page itself
(which gagar_web/urls.py mounts after this URLconf), and a longer suffix before a shorter one it
ends with (adjudication/draft/ before draft/)."""

from django.urls import path, register_converter

from reviews.views import audit, bench, calibration, campaigns, group, hits, judge, queue, search


class LaneConverter:
    """A rollout of a group as the person asking names it: its index, or, judging the group
    blind, its lane label (A, B, ..., AA: reviews.selectors.lanes). The view resolves it."""

    regex = "[0-9]{1,9}|[A-Z]{1,4}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value) -> str:
        return str(value)


register_converter(LaneConverter, "lane")

GROUP = "runs/<str:run>/groups/<path:uid>/"

urlpatterns = [
    path("review/", queue.queue, name="review-queue"),
    path("review/next/", queue.next_group, name="review-next"),
    path("review/policy/", queue.policy, name="review-policy"),
    path("adjudication/", queue.adjudication_queue, name="adjudication-queue"),
    path("calibration/", calibration.calibration, name="calibration"),
    path("calibration/activate/", calibration.activate, name="calibration-activate"),
    path("calibration/bench/", bench.bench, name="grader-bench"),
    path("calibration/campaigns/", campaigns.campaigns, name="grader-campaigns"),
    path("calibration/campaigns/<int:pk>/cancel/", campaigns.cancel, name="grader-campaign-cancel"),
    path("calibration/minimum/", calibration.minimum, name="calibration-minimum"),
    path("audit/", audit.audit_queue, name="audit-queue"),
    path("audit/rollouts/<int:rollout_id>/", audit.decide, name="audit-decide"),
    path("audit/bulk/", audit.decide_bulk, name="audit-bulk"),
    path("audit/scanners/", audit.scanners, name="audit-scanners"),
    path("search/", search.search, name="search"),
    path("search/signals/", search.signal, name="search-signals"),
    path(GROUP + "adjudication/draft/", judge.adjudication_draft, name="adjudication-draft"),
    path(GROUP + "judgment/", judge.submit, name="judgment-submit"),
    path(GROUP + "draft/", judge.draft, name="judgment-draft"),
    path(GROUP + "reveal/", judge.reveal, name="judgment-reveal"),
    path(GROUP + "skip/", judge.skip, name="judgment-skip"),
    path(GROUP + "judge-blind/", judge.claim, name="group-claim"),
    path(GROUP + "show-verdict/", judge.show, name="group-show-verdict"),
    path(GROUP + "compare/", judge.compare, name="patch-compare"),
    path(GROUP + "adjudication/", judge.adjudicate, name="adjudication-submit"),
    path(GROUP + "rollouts/<lane:lane>/hits/", hits.rollout_hits, name="rollout-hits"),
    path(GROUP + "rollouts/<lane:lane>/turns/", group.rollout_turns, name="rollout-turns"),
    path(GROUP + "rollouts/<lane:lane>/diff/", group.rollout_diff, name="rollout-diff"),
    path(GROUP + "rollouts/<lane:lane>/extra-files/", group.rollout_extra_files, name="rollout-extra-files"),
    path(GROUP + "rollouts/<lane:lane>/log/", group.rollout_log, name="rollout-log"),
    path(GROUP + "rollouts/<lane:lane>/files/", group.rollout_files, name="rollout-files"),
    # The group page itself is named by the site's URLconf (gagar_web/urls.py), after these.
]
