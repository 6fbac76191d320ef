"""The review desk through its pages: queue, blind judging, conflicts, drafts, audit, adjudication."""

from __future__ import annotations

import pytest

from grading.method.services.computation import refresh_stale_step
from grading.method.services.mappings import active_mapping
from grading.models import AdvantageResult, CheatDecision, Group, Rollout, Step
from grading.verdicts.store import GradeInput, record_verdict
from reviews.models import Assignment, CheatAudit, GroupReview, Judgment, JudgmentItem, Reveal, ReviewPolicy
from reviews.selectors.lanes import lanes_for
from reviews.services.queue import assign, update_policy
from tests.helpers.desk import GRADER, SECRET_NOTE, as_lanes, group_url, judgment_post
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = pytest.mark.django_db

GOOD = {0: "T1", 1: "T2", 3: "T3"}  # the passing rollouts of g1 / g2


def next_group(client) -> str | None:
    r = client.post("/projects/acme/review/next/")
    assert r.status_code == 302
    return r.url.rstrip("/").split("/groups/")[1] if "/groups/" in r.url else None


# --- queue -----------------------------------------------------------------------------------


def test_queue_serves_each_mixed_group_once_graded_first_and_resumes_the_open_one(client, bob, groups):
    update_policy(project=groups["g1@1"].run.project, overlap=0.0, blind=True, lease_minutes=60)
    client.force_login(bob)
    first = next_group(client)
    assert first == "g1@1"  # the graded group comes before the ungraded one
    assert next_group(client) == first  # an open assignment is resumed, not a second one handed out
    r = client.post(group_url(first, "judgment/"), as_lanes(judgment_post(GOOD), client, first))
    assert r.status_code == 302
    assert next_group(client) == "g2@1"
    client.post(group_url("g2@1", "skip/"))
    assert next_group(client) is None  # g3 is not mixed; g1 judged; g2 skipped: never served twice
    assert Assignment.objects.filter(reviewer=bob).count() == 2
    page = client.get("/projects/acme/review/").content.decode()
    assert "Nothing left for you" in page and 'data-testid="my-submitted">1<' in page


def test_overlap_share_sends_groups_to_a_second_reviewer(client, bob, dan, groups):
    project = groups["g1@1"].run.project
    update_policy(project=project, overlap=0.0, blind=True, lease_minutes=60)
    client.force_login(bob)
    assert next_group(client) == "g1@1"
    client.force_login(dan)
    assert next_group(client) == "g2@1"  # g1 already has its one reviewer (open, within the lease)
    Assignment.objects.filter(reviewer=dan).delete()
    update_policy(project=project, overlap=1.0, blind=True, lease_minutes=60)
    assert next_group(client) == "g1@1"  # every group now wants two reviewers


def test_blind_assignment_order_is_a_shuffle_of_the_groups_rollouts(bob, groups):
    orders = {tuple(assign(group=groups["g1@1"], reviewer=bob).order)}
    assert sorted(next(iter(orders))) == [0, 1, 2, 3]


# --- blind mode ------------------------------------------------------------------------------


def test_blind_mode_hides_every_grader_field_until_submit_then_reveals_and_logs(client, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    html = client.get(group_url("g1@1")).content.decode()
    assert "Blind review" in html
    for leak in (GRADER, SECRET_NOTE, "read the fix", 'aria-label="Grader verdict"', "cheat flagged", "badge tier-T"):
        assert leak not in html, leak
    assert not Reveal.objects.exists()

    r = client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post(GOOD), client, "g1@1"), follow=True)
    html = r.content.decode()
    assert r.status_code == 200 and "Judgment stored" in html
    assert GRADER in html and SECRET_NOTE in html and 'aria-label="Grader verdict"' in html
    assert 'data-testid="mine-1"' in html and "grader agrees" in html  # bob said T2, as the grader did
    reveal = Reveal.objects.get()
    assert (reveal.user, reveal.reason, reveal.verdict.grader) == (bob, Reveal.Reason.SUBMITTED, GRADER)
    judgment = Judgment.objects.get()
    assert judgment.blind is True
    assert {(i.rollout.index, i.tier, i.rank) for i in judgment.items.all()} == {(0, "T1", 1), (1, "T2", 2), (3, "T3", 3)}


def test_early_reveal_is_logged_and_the_judgment_is_not_blind(client, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    r = client.post(group_url("g1@1", "reveal/"), follow=True)
    assert GRADER in r.content.decode()
    assert Reveal.objects.get().reason == Reveal.Reason.EARLY
    client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post(GOOD), client, "g1@1"))
    assert Judgment.objects.get().blind is False
    assert list(Reveal.objects.order_by("id").values_list("reason", flat=True)) == ["early", "submitted"]


def test_opening_a_graded_group_outside_an_assignment_is_logged_once_and_keeps_it_out_of_your_queue(client, alice, groups):
    client.force_login(alice)
    for _ in range(2):
        assert GRADER in client.get(group_url("g1@1")).content.decode()
    assert list(Reveal.objects.values_list("user__username", "reason")) == [("alice", "browse")]
    assert next_group(client) == "g2@1"  # alice has seen g1's verdict, so it is not blind work for her


def test_non_blind_policy_shows_the_grader_while_judging(client, bob, groups):
    update_policy(project=groups["g1@1"].run.project, overlap=0.0, blind=False, lease_minutes=60)
    client.force_login(bob)
    next_group(client)
    assert GRADER in client.get(group_url("g1@1")).content.decode()


# --- submitting ------------------------------------------------------------------------------


def test_incomplete_or_inconsistent_judgment_is_refused_naming_the_field_and_stores_nothing(client, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    r = client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post({0: "T1", 1: "T2"}), client, "g1@1"))
    assert r.status_code == 422
    html = r.content.decode()
    lane = lanes_for(user=bob, group=groups["g1@1"]).key  # a blind judge's form names rollouts by their labels
    assert f"tier-{lane(3)}" in html and f"rollout {lane(3)} passed and needs a tier" in html and "tier-3" not in html
    assert f'value="T2" checked data-testid="tier-{lane(1)}-T2"' in html
    r = client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post(GOOD, {0: 3, 1: 2, 3: 1}), client, "g1@1"))
    assert r.status_code == 422 and "ranks contradict tiers" in r.content.decode()
    r = client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post({**GOOD, 2: "T1"}), client, "g1@1"))
    assert r.status_code == 302  # a tier for the failing rollout is not read: only passing ones are judged
    assert Judgment.objects.count() == 1 and JudgmentItem.objects.count() == 3


def test_ties_and_ranks_are_stored_as_given(client, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    client.post(
        group_url("g1@1", "judgment/"), as_lanes(judgment_post({0: "T1", 1: "T1", 3: "T2"}, {0: 1, 1: 1, 3: 2}), client, "g1@1")
    )
    assert sorted(JudgmentItem.objects.values_list("rollout__index", "rank")) == [(0, 1), (1, 1), (3, 2)]


def test_a_rank_left_blank_follows_its_tier_beside_the_ranks_given(client, bob, groups):
    # bob pressed [ once (rank 1 on #1) and left the others blank: stored, the blanks ranked
    # from their tiers after the ranked rollouts of their tier (consensus.fill_ranks).
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    r = client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post({0: "T1", 1: "T1", 3: "T2"}, {1: 1}), client, "g1@1"))
    assert r.status_code == 302
    assert sorted(JudgmentItem.objects.values_list("rollout__index", "tier", "rank")) == [
        (0, "T1", 2),
        (1, "T1", 1),
        (3, "T2", 3),
    ]


def test_refusals_name_the_lane_in_words_never_a_field(client, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    lane = lanes_for(user=bob, group=groups["g1@1"]).key
    r = client.post(
        group_url("g1@1", "judgment/"), as_lanes(judgment_post({0: "T1", 1: "T2", 3: "T3"}, {0: "x", 1: 0}), client, "g1@1")
    )
    assert r.status_code == 422
    html = r.content.decode()
    errors = html[html.index('data-testid="form-errors"') :]
    errors = errors[: errors.index("</div>")]
    assert f"rollout {lane(0)}: a rank must be a whole number, got &#x27;x&#x27;" in errors
    assert "<code>" not in errors and f"rank-{lane(0)}:" not in errors and "rank-0" not in errors
    # Ranks given by some, contradicting tiers: still refused, by lane.
    r = client.post(
        group_url("g1@1", "judgment/"), as_lanes(judgment_post({0: "T1", 1: "T2", 3: "T3"}, {0: 2, 1: 1}), client, "g1@1")
    )
    assert r.status_code == 422 and f"{lane(1)} (T2) is ranked above {lane(0)} (T1)" in r.content.decode()
    # Through htmx (the page's own submit) the message says the same, in words.
    r = client.post(
        group_url("g1@1", "judgment/"), as_lanes(judgment_post({0: "T1", 1: "T2"}), client, "g1@1"), HTTP_HX_REQUEST="true"
    )
    assert r.status_code == 204
    page = client.get(group_url("g1@1")).content.decode()
    assert f"The judgment was not stored: rollout {lane(3)} passed and needs a tier" in page
    assert f"tier-{lane(3)}: " not in page
    assert not Judgment.objects.exists()


def test_same_person_submitting_twice_gets_409_and_keeps_the_first(client, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    assert client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post(GOOD), client, "g1@1")).status_code == 302
    r = client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post({0: "T3", 1: "T3", 3: "T3"}), client, "g1@1"))
    assert r.status_code == 409
    assert "already submitted" in r.content.decode()
    assert Judgment.objects.count() == 1
    assert set(JudgmentItem.objects.values_list("tier", flat=True)) == {"T1", "T2", "T3"}


def test_second_reviewer_submitting_concurrently_is_told_and_both_judgments_are_kept(client, bob, dan, groups):
    for person in (bob, dan):
        assign(group=groups["g1@1"], reviewer=person)
    client.force_login(bob)
    client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post(GOOD, seen_version=0), client, "g1@1"))
    client.force_login(dan)  # dan loaded the page at version 0 too, before bob submitted
    r = client.post(
        group_url("g1@1", "judgment/"),
        as_lanes(judgment_post({0: "T1", 1: "T1", 3: "T2"}, seen_version=0), client, "g1@1"),
        follow=True,
    )
    assert "Conflict: bob submitted a judgment on this group while you were judging" in r.content.decode()
    assert sorted(Judgment.objects.values_list("reviewer__username", flat=True)) == ["bob", "dan"]
    review = GroupReview.objects.get(group=groups["g1@1"])
    assert (review.n_reviews, review.version, review.needs_adjudication) == (2, 2, True)


def test_skipped_group_cannot_be_judged(client, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    client.post(group_url("g1@1", "skip/"))
    r = client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post(GOOD), client, "g1@1"))
    assert r.status_code == 422 and "skipped" in r.content.decode()
    assert not Judgment.objects.exists()


# --- drafts ----------------------------------------------------------------------------------


def test_draft_survives_a_reload(client, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    r = client.post(
        group_url("g1@1", "draft/"),
        as_lanes({"tier-1": "T2", "rank-1": "2", "cheat-3": "on", "note": "halfway", "junk": "x"}, client, "g1@1"),
    )
    assert r.status_code == 200 and "saved_at" in r.json()
    assignment = Assignment.objects.get()
    assert assignment.draft == {"tier-1": "T2", "rank-1": "2", "cheat-3": "on", "note": "halfway"}
    html = client.get(group_url("g1@1")).content.decode()
    lane = lanes_for(user=bob, group=groups["g1@1"]).key  # stored by index, shown under bob's labels
    assert f'value="T2" checked data-testid="tier-{lane(1)}-T2"' in html
    assert f'name="cheat-{lane(3)}" checked' in html and ">halfway</textarea>" in html
    client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post(GOOD), client, "g1@1"))
    assert client.post(group_url("g1@1", "draft/"), as_lanes({"tier-1": "T1"}, client, "g1@1")).status_code == 409


# --- access ----------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["judgment/", "draft/", "reveal/", "skip/"])
def test_judging_endpoints_refuse_strangers_and_unassigned_reviewers(client, bob, dan, carol, groups, suffix):
    assign(group=groups["g1@1"], reviewer=bob)
    url = group_url("g1@1", suffix)
    assert client.post(url).status_code == 302 and "/accounts/login/" in client.post(url).url  # anonymous
    client.force_login(carol)  # another project's admin
    assert client.post(url, judgment_post(GOOD)).status_code == 404
    client.force_login(dan)  # a reviewer of acme, but the group is not assigned to him
    assert client.post(url, judgment_post(GOOD)).status_code == 404
    client.force_login(bob)
    assert client.get(url).status_code == 405
    assert not Judgment.objects.exists()


def test_pages_of_the_desk_refuse_by_role(client, bob, erin, carol, groups):
    client.force_login(bob)  # a reviewer may not audit or adjudicate
    assert client.get("/projects/acme/audit/").status_code == 403
    assert client.get("/projects/acme/adjudication/").status_code == 403
    assert client.post("/projects/acme/review/policy/", {"overlap_percent": "50", "lease_minutes": "60"}).status_code == 403
    client.force_login(carol)
    for url in (
        "/projects/acme/review/",
        "/projects/acme/audit/",
        "/projects/acme/adjudication/",
        group_url("g1@1", "compare/?a=0&b=1"),
    ):
        assert client.get(url).status_code == 404, url
    client.force_login(erin)
    assert client.get("/projects/acme/audit/").status_code == 200


# --- compare -----------------------------------------------------------------------------------


def test_patch_vs_patch_and_vs_gold(client, bob, groups):
    rollout = Rollout.objects.get(group=groups["g1@1"], index=1)
    rollout.content.patch = rollout.content.patch.replace("y = 2", "y = '<img src=x onerror=alert(1)>'")
    rollout.content.save()
    client.force_login(bob)
    html = client.get(group_url("g1@1", "compare/?a=0&b=1"), HTTP_HX_REQUEST="true").content.decode()
    assert "only in #0" in html and "+y = 1" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<img src=x" not in html
    html = client.get(group_url("g1@1", "compare/?a=0&b=gold")).content.decode()
    assert "only in gold patch" in html and "+y = 9" in html
    assert client.get(group_url("g1@1", "compare/?a=0&b=99")).status_code == 400


# --- cheat audit -------------------------------------------------------------------------------


def exported_reward(group: Group, index: int) -> float:
    step = Step.objects.get(pk=group.step_id)
    mapping = active_mapping(group.run)
    refresh_stale_step(step=step, mapping=mapping)
    return AdvantageResult.objects.get(rollout__group=group, rollout__index=index, mapping=mapping).reward


def test_auditor_confirms_then_overturns_a_grader_flag_and_the_reward_follows(client, erin, groups):
    group = groups["g1@1"]
    decision = CheatDecision.objects.get(rollout__group=group, rollout__index=3)
    rollout = decision.rollout_id
    assert decision.source == "grader" and exported_reward(group, 3) == 1.0
    client.force_login(erin)
    page = client.get("/projects/acme/audit/").content.decode()
    assert f'data-testid="audit-rollout-{rollout}"' in page and "read the fix" in page  # the grader's cited evidence
    r = client.post(f"/projects/acme/audit/rollouts/{rollout}/", {"verdict": "confirm", "reason": ""}, HTTP_HX_REQUEST="true")
    assert r.status_code == 422 and "reason is required" in r.content.decode()
    decision.refresh_from_db()
    assert decision.confirmed is None
    r = client.post(
        f"/projects/acme/audit/rollouts/{rollout}/",
        {"verdict": "confirm", "reason": "turn 1 reads git log of the fix", "status": "all", "source": "grader"},
    )
    assert r.status_code == 302 and r["Location"] == "/projects/acme/audit/?status=all&source=grader"  # the filters kept
    decision.refresh_from_db()
    assert decision.confirmed is True and decision.decided_by == erin
    assert exported_reward(group, 3) == 0.0
    r = client.post(
        f"/projects/acme/audit/rollouts/{rollout}/",
        {"verdict": "overturn", "reason": "the log was the issue text", "status": "all"},
        HTTP_HX_REQUEST="true",
    )
    assert r.status_code == 200 and "overturned" in r.content.decode()
    assert exported_reward(group, 3) == 1.0
    assert list(CheatAudit.objects.order_by("id").values_list("confirmed", flat=True)) == [True, False]


def test_reviewers_cheat_call_lands_in_the_audit_queue_and_changes_nothing_until_confirmed(client, bob, erin, groups):
    assign(group=groups["g2@1"], reviewer=bob)
    client.force_login(bob)
    client.post(
        group_url("g2@1", "judgment/"),
        as_lanes(judgment_post(GOOD, cheat=[1], **{"note-1": "pip installs the fixed release"}), client, "g2@1"),
    )
    decision = CheatDecision.objects.get(source="reviewer")
    assert decision.confirmed is None and "flagged by bob: pip installs the fixed release" in decision.reason
    assert exported_reward(groups["g2@1"], 1) == 1.0
    client.force_login(erin)
    assert "pip installs the fixed release" in client.get("/projects/acme/audit/?source=reviewer").content.decode()


# --- adjudication ------------------------------------------------------------------------------


def test_disagreeing_reviewers_go_to_adjudication_and_the_adjudicator_settles_it(client, bob, dan, fay, groups):
    update_policy(project=groups["g2@1"].run.project, overlap=1.0, blind=True, lease_minutes=60)
    for person, tiers in ((bob, GOOD), (dan, {0: "T3", 1: "T1", 3: "T1"})):
        assign(group=groups["g2@1"], reviewer=person)
        client.force_login(person)
        client.post(group_url("g2@1", "judgment/"), as_lanes(judgment_post(tiers), client, "g2@1"))
    client.force_login(fay)
    queue = client.get("/projects/acme/adjudication/").content.decode()
    assert "g2@1" in queue and "bob vs dan" in queue
    page = client.get(group_url("g2@1") + "?mode=adjudicate").content.decode()
    assert ("Record final ranking" in page and "dan: " in page.replace("\n", " ")) or "dan" in page
    r = client.post(group_url("g2@1", "adjudication/"), judgment_post(GOOD))
    assert r.status_code == 422 and "reason code" in r.content.decode()
    r = client.post(group_url("g2@1", "adjudication/"), judgment_post(GOOD, reason="reviewers_disagree"))
    assert r.status_code == 302
    review = GroupReview.objects.get(group=groups["g2@1"])
    assert review.adjudicated and not review.needs_adjudication
    assert "No group waits" in client.get("/projects/acme/adjudication/").content.decode()
    r = client.post(group_url("g2@1", "adjudication/"), judgment_post(GOOD, reason="tie"))
    assert r.status_code == 409
    assert Judgment.objects.filter(kind="adjudication").count() == 1


def test_reviewer_against_grader_disagreement_also_needs_adjudication(client, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post({0: "T2", 1: "T1", 3: "T3"}), client, "g1@1"))
    review = GroupReview.objects.get(group=groups["g1@1"])
    assert review.needs_adjudication
    assert {d["kind"] for d in review.disagreement} == {"tier", "top1"}
    assert all(d["between"] == ["bob", "grader"] for d in review.disagreement)


def test_the_adjudication_queue_logs_the_verdict_people_are_shown(client, bob, fay, groups):
    """A campaign's bench-only verdict, newer than the run's, is not the grader's verdict people
    see (grading.selectors.verdicts.shown_verdict): showing the adjudicator a reason that names the grader
    logs a reveal of the run's verdict, the one the group page shows."""
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post({0: "T2", 1: "T1", 3: "T3"}), client, "g1@1"))
    shown = groups["g1@1"].verdicts.get(grader=GRADER)
    bench, _ = record_verdict(
        group=groups["g1@1"], grader="bench@1", status="valid", grades=[GradeInput(0, "T3", 1)], bench_only=True
    )
    assert bench.created_at >= shown.created_at
    client.force_login(fay)
    assert "g1@1" in client.get("/projects/acme/adjudication/").content.decode()
    assert list(Reveal.objects.filter(user=fay).values_list("verdict_id", flat=True)) == [shown.pk]


# --- query counts --------------------------------------------------------------------------------


def test_queue_and_group_pages_have_pinned_query_counts(client, bob, groups, django_assert_num_queries):
    project = groups["g1@1"].run.project
    ReviewPolicy.objects.get_or_create(project=project)  # the steady state: the project's policy is stored
    client.force_login(bob)
    with django_assert_num_queries(12):
        assert client.get("/projects/acme/review/").status_code == 200
    ingest_groups(project, *(small_group(f"x{i}@1", run=f"r{i}", instance_id=f"x-{i}") for i in range(2, 5)))
    with django_assert_num_queries(12):  # the same with four runs and more groups
        assert client.get("/projects/acme/review/").status_code == 200
    assign(group=groups["g1@1"], reviewer=bob)
    # 11 + the project's rubric guide + the queue place ("group n of N" and "previous group"):
    # the finished assignments counted with the latest in one, the policy, the project's runs
    # and the count of groups still waiting (queue_groups, capped)
    with django_assert_num_queries(16):
        html = client.get(group_url("g1@1")).content.decode()
    assert "group 1 of 5</strong> in your queue" in html and 'data-testid="previous-group"' not in html
    client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post(GOOD), client, "g1@1"))
    assign(group=groups["g2@1"], reviewer=bob)
    with django_assert_num_queries(16):  # the same with a finished assignment before it (g1, x2-x4 and g2)
        html = client.get(group_url("g2@1")).content.decode()
    assert "group 2 of 5</strong> in your queue" in html and "previous group (g1@1, submitted)" in html


def test_audit_and_adjudication_queues_do_not_grow_queries_with_rows(
    client, alice, bob, dan, groups, django_assert_num_queries, django_assert_max_num_queries
):
    from grading.models import CheatDecision, Rollout

    update_policy(project=groups["g1@1"].run.project, overlap=1.0, blind=True, lease_minutes=60)

    def add_rows(uid):
        for rollout in Rollout.objects.filter(group__uid=uid, passed=True):
            CheatDecision.objects.create(rollout=rollout, source="prescreen", reason="reads git log")
        for person, tiers in ((bob, GOOD), (dan, {0: "T3", 1: "T1", 3: "T1"})):
            assign(group=groups[uid], reviewer=person)
            client.force_login(person)
            client.post(group_url(uid, "judgment/"), as_lanes(judgment_post(tiers), client, uid))
        client.force_login(alice)

    for uid in ("g1@1", "g2@1"):  # the second round has twice the signals and groups waiting
        add_rows(uid)
        # 10: session, user, project, membership, the counts, the bulk choices, the pager's count,
        # a page of rollouts, their signals, their audits
        with django_assert_num_queries(10):
            assert client.get("/projects/acme/audit/?status=all").status_code == 200
        # 7 (session, user, project, membership, the counts, a page of ids, its rows) + up to 4 for
        # blindness: the viewer's blind groups, verdicts, reveals seen, reveals logged (if new)
        with django_assert_max_num_queries(11):
            assert client.get("/projects/acme/adjudication/").status_code == 200


def test_adjudication_queue_pages_in_step_and_uid_order_with_its_counts(client, fay, acme):
    """51 groups waiting and 2 settled: page 1 holds 50 in step, then uid order, page 2 the last;
    the counts above the table and the pager agree with the rows, settled ones only with show=all."""
    ingest_groups(
        acme, *(small_group(f"t{n:02d}@{step}", step=step, instance_id=f"t{n:02d}") for step in (2, 1) for n in range(27))
    )
    groups = Group.objects.order_by("?")
    for n, group in enumerate(groups[:53]):
        settled = n < 2
        GroupReview.objects.create(
            group=group,
            n_reviews=2,
            needs_adjudication=not settled,
            adjudicated=settled,
            disagreement=[{"between": ["bob", "dan"], "kind": "best"}],
        )
    waiting = [g.uid for g in Group.objects.filter(review__needs_adjudication=True).order_by("step_number", "uid")]
    client.force_login(fay)

    def rows(url):
        html = client.get(url).content.decode()
        return html, [uid for uid in (g.uid for g in Group.objects.all()) if f">{uid}</a>" in html]

    first, first_rows = rows("/projects/acme/adjudication/")
    second, second_rows = rows("/projects/acme/adjudication/?page=2")
    assert "51 waiting, 2 settled" in first and "page 1 of 2" in first and "page 2 of 2" in second
    assert len(first_rows) == 50 and len(second_rows) == 1
    assert first.index(f">{waiting[0]}</a>") < first.index(f">{waiting[1]}</a>") < first.index(f">{waiting[49]}</a>")
    assert second_rows == [waiting[50]]
    everything, _ = rows("/projects/acme/adjudication/?show=all&page=2")
    assert "page 2 of 2" in everything and everything.count('badge pass">settled') + everything.count("waiting</span>") == 3


def test_the_adjudication_form_offers_each_raters_ranking_in_pinned_queries(client, fay, judged, django_assert_num_queries):
    # fay adjudicates g1@1, where bob and dan disagree; the page already reads their judgments
    # and the grader's verdict, so the rankings to start from cost no query of their own.
    client.force_login(fay)
    # session, user, project, membership, run, group; assignment, own judgments, review state,
    # everyone's judgments (with their items and rollouts: 3); the rubric guide; her draft;
    # rollouts, contents; the verdict and its grades, her reveal check and its logging
    with django_assert_num_queries(20):
        html = client.get(group_url("g1@1") + "?mode=adjudicate").content.decode()
    assert 'data-testid="start-from-reviewer-1">bob&#x27;s ranking<' in html
    assert 'data-testid="start-from-reviewer-2">dan&#x27;s ranking<' in html
    assert 'data-testid="start-from-grader">the grader&#x27;s ranking<' in html
    start = html[html.index('id="start-rankings"') :]
    assert '"reviewer-2": {"0": {"tier": "T1", "rank": 1, "cheat": false}, "1": {"tier": "T3", "rank": 2' in start
    assert 'checked data-testid="tier-0-' not in html  # the form itself starts blank
