"""Juries: combining members' verdicts into a stored verdict, versions, and a jury as a run's
grading policy (its members grade every mixed group; the method uses the jury's verdict)."""

import orjson
import pytest
from django.db import transaction

from grading.grader.combine import combine
from grading.method.services import computation as services
from grading.method.services.mappings import active_mapping
from grading.models import AdvantageResult, CheatDecision, Group, Jury, RolloutGrade, Run, Verdict
from grading.registry.juries import JuryError, save_jury
from grading.selectors.verdicts import latest_verdict
from grading.verdicts.deliberation import record_jury_verdict, waiting_jury
from grading.verdicts.store import GradeInput, record_verdict
from grading.waits.progress import step_status
from reviews.selectors.bench import run_graders
from reviews.selectors.calibration import judgment_frames
from reviews.selectors.rankings import grader_ranking
from reviews.services.judgments import ItemInput, submit_judgment
from tests.factories import make_group, make_project, make_run, make_step, make_user
from tests.helpers.groups import small_group
from tests.helpers.ingest import post_groups


def test_majority_breaks_a_tie_to_the_better_median_tier_and_ranks_follow_tiers():
    a = {0: ("T1", 1), 1: ("T2", 2), 2: ("T3", 3)}
    b = {0: ("T2", 2), 1: ("T2", 1), 2: ("T3", 3)}
    c = {0: ("T3", 3), 1: ("T1", 1), 2: ("T3", 2)}
    # 0: one vote each -> lower median of (T1, T2, T3) = T2; 1: T2 twice; 2: T3 thrice
    assert combine("majority", [a, b, c]).ranking == {0: ("T2", 2), 1: ("T2", 1), 2: ("T3", 3)}
    # two members, a tie: the better of the two tiers, as the people's consensus
    assert combine("majority", [{0: ("T1", 1)}, {0: ("T2", 1)}]).ranking == {0: ("T1", 1)}


def test_mean_rank_orders_within_a_tier_by_the_mean_of_ranks():
    a = {0: ("T1", 1), 1: ("T1", 2), 2: ("T1", 3)}
    b = {0: ("T1", 3), 1: ("T1", 1), 2: ("T1", 1)}
    # means 2, 1.5, 2 ; median_low would give 1, 1, 1
    assert combine("mean_rank", [a, b]).ranking == {0: ("T1", 2), 1: ("T1", 1), 2: ("T1", 2)}
    assert combine("majority", [a, b]).ranking == {0: ("T1", 1), 1: ("T1", 1), 2: ("T1", 1)}


def test_agree_or_abstain_abstains_only_beyond_the_set_gap():
    a = {0: ("T1", 1), 1: ("T2", 2)}
    near = {0: ("T2", 1), 1: ("T2", 1)}
    far = {0: ("T3", 2), 1: ("T2", 1)}
    assert not combine("agree_or_abstain", [a, near], max_gap=1).abstained
    out = combine("agree_or_abstain", [a, far], max_gap=1)
    assert out.abstained and out.split == [0] and out.ranking == {} and out.max_gap == 2
    assert combine("agree_or_abstain", [a, near], max_gap=0).split == [0]  # rollout 1: both T2


@pytest.mark.django_db
def test_editing_a_jury_makes_a_new_version_and_the_same_definition_does_not():
    project = make_project()
    one, created = save_jury(project=project, name="pair", members=["heuristic@1", "ext@1"], rule="majority")
    same, again = save_jury(project=project, name="pair", members=["heuristic@1", "ext@1"], rule="majority")
    two, _ = save_jury(project=project, name="pair", members=["heuristic@1", "ext@1"], rule="agree_or_abstain", max_gap=1)
    assert (one.pk, one.grader, created, again) == (same.pk, "jury:pair@1", True, False) and two.grader == "jury:pair@2"
    for bad, field in (
        ({"members": ["heuristic@1"]}, "members"),
        ({"members": ["heuristic@1", "jury:x@1"]}, "members"),
        ({"rule": "vote"}, "rule"),
        ({"max_gap": 3}, "max_gap"),
    ):
        with pytest.raises(JuryError) as refused:
            save_jury(**{"project": project, "name": "pair", "members": ["a@1", "b@1"], "rule": "majority", **bad})
        assert refused.value.field == field


@pytest.mark.django_db
def test_a_jury_verdict_is_stored_when_the_last_member_arrives_with_members_in_raw():
    project = make_project()
    group = make_group("g1", step=make_step(make_run(project)), rewards=(1, 1, 0))
    jury, _ = save_jury(project=project, name="pair", members=["a@1", "b@1"], rule="majority")
    record_verdict(group=group, grader="a@1", status="valid", grades=[GradeInput(0, "T1", 1), GradeInput(1, "T3", 2, cheat=True)])
    assert not Verdict.objects.filter(grader=jury.grader).exists()  # b has not spoken
    record_verdict(group=group, grader="b@1", status="valid", grades=[GradeInput(0, "T2", 2), GradeInput(1, "T3", 1)])
    verdict = Verdict.objects.get(group=group, grader="jury:pair@1")
    assert verdict.status == "valid" and verdict.raw["jury"]["members"] == ["a@1", "b@1"]
    assert verdict.raw["jury"]["rule"] == "majority" and verdict.raw["jury"]["abstained"] is False
    grades = {g.rollout.index: (g.tier, g.rank, g.cheat) for g in verdict.grades.select_related("rollout")}
    assert grades == {0: ("T1", 1, False), 1: ("T3", 2, False)}  # one of two flags a cheat: not a majority
    assert record_jury_verdict(jury=jury, group=group).pk == verdict.pk  # stored once
    # neither member cited anything: what they said against a rollout is uncited, and so is the
    # jury's T3, which rests on nothing more
    uncited = RolloutGrade.objects.filter(verdict__group=group, uncited=True)
    assert sorted(uncited.values_list("verdict__grader", "rollout__index")) == [
        ("a@1", 1),
        ("b@1", 0),
        ("b@1", 1),
        ("jury:pair@1", 1),
    ]


def _ext_grades(heuristic: Verdict, *, disagree: bool) -> list[GradeInput]:
    """The external grader's judgment: the heuristic's, or every tier at the other extreme."""
    out = []
    for g in heuristic.grades.select_related("rollout"):
        tier = ("T1" if g.tier != "T1" else "T3") if disagree else g.tier
        out.append(GradeInput(g.rollout.index, tier, g.rank))
    return out


def api(client, method, path, token, body=None):
    kwargs = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is not None:
        kwargs.update(data=orjson.dumps(body), content_type="application/json")
    return getattr(client, method)(f"{path}{'&' if '?' in path else '?'}project=acme", **kwargs)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("on_abstain", ["fallback", "wait"])
def test_a_jury_as_run_policy_grades_with_its_members_and_its_verdict_moves_the_numbers(client, alice_token, acme, on_abstain):
    body = {"name": "pair", "members": ["heuristic@1", "ext@1"], "rule": "agree_or_abstain", "max_gap": 1}
    r = api(client, "post", "/api/v1/juries/", alice_token, body | {"on_abstain": on_abstain})
    assert r.status_code == 201 and r.json()["grader"] == "jury:pair@1", r.content
    assert api(client, "post", "/api/v1/juries/", alice_token, body | {"on_abstain": on_abstain}).status_code == 200
    jury = Jury.objects.get(name="pair")
    assert api(client, "post", "/api/v1/runs/", alice_token, {"name": "rl"}).status_code == 201
    r = api(client, "patch", "/api/v1/runs/rl/", alice_token, {"jury": "pair", "grading_deadline_seconds": 600})
    assert r.status_code == 200, r.content
    assert (r.json()["jury"], r.json()["grader"]) == ("jury:pair@1", "jury:pair@1")
    groups = [small_group(f"g{i}", run="rl", step=1, instance_id=f"t-{i}", rewards=(1, 0, 1, 1)) for i in range(2)]
    post_groups(client, alice_token, *groups)
    run = Run.objects.get(name="rl")
    agree, split = Group.objects.get(uid="g0"), Group.objects.get(uid="g1")
    # the heuristic member graded both groups at ingest; the jury waits for the external member
    assert set(Verdict.objects.filter(group__run=run).values_list("grader", flat=True)) == {"heuristic@1"}
    assert step_status(run.steps.get()).pending == 2
    for group, disagree in ((agree, False), (split, True)):
        heuristic = Verdict.objects.get(group=group, grader="heuristic@1")
        record_verdict(group=group, grader="ext@1", status="valid", grades=_ext_grades(heuristic, disagree=disagree))
    assert Verdict.objects.get(group=agree, grader=jury.grader).status == "valid"
    split_verdict = Verdict.objects.filter(group=split, grader=jury.grader).first()
    status = step_status(run.steps.get())
    if on_abstain == "fallback":
        assert split_verdict.status == "invalid" and split_verdict.raw["jury"]["abstained"] is True
        assert (status.graded, status.invalid, status.pending, status.final) == (1, 1, 0, True)
    else:  # waits for a person until the deadline: no verdict yet, the step is not final
        assert split_verdict is None
        assert (status.graded, status.pending, status.final) == (1, 1, False)
    step = run.steps.get()
    services.refresh_stale_step(step=step, mapping=active_mapping(run))
    statuses = dict(AdvantageResult.objects.filter(step=step, passed=True).values_list("uid", "status").distinct())
    assert statuses == {"g0": "graded", "g1": "fallback"}
    used = set(AdvantageResult.objects.filter(step=step, uid="g0").values_list("verdict__grader", flat=True))
    assert used == {jury.grader}  # the jury's verdict, not the heuristic's newer or older one


@pytest.mark.django_db(transaction=True)
def test_a_person_settles_a_group_the_jury_waits_on_and_that_verdict_is_never_a_graders():
    project = make_project()
    jury, _ = save_jury(
        project=project, name="pair", members=["a@1", "b@1"], rule="agree_or_abstain", max_gap=1, on_abstain="wait"
    )
    run = make_run(project, jury=jury, grading_deadline_seconds=600)
    group = make_group("g1", step=make_step(run), rewards=(1, 1, 0))
    record_verdict(group=group, grader="a@1", status="valid", grades=[GradeInput(0, "T1", 1), GradeInput(1, "T1", 1)])
    record_verdict(group=group, grader="b@1", status="valid", grades=[GradeInput(0, "T3", 2), GradeInput(1, "T1", 1)])
    assert waiting_jury(group) == jury and not Verdict.objects.filter(grader=jury.grader).exists()
    assert step_status(group.step).pending == 1
    bob = make_user("bob")
    with transaction.atomic():
        submit_judgment(reviewer=bob, group=group, items=[ItemInput(0, "T2", cheat=True), ItemInput(1, "T1")])

    settled = Verdict.objects.get(group=group, grader=jury.grader)
    assert (settled.status, settled.settled_by) == ("valid", "person")
    assert settled.raw["jury"]["person"] == "bob" and settled.raw["jury"]["split"] == [0]
    assert {g.rollout.index: (g.tier, g.rank) for g in settled.grades.select_related("rollout")} == {0: ("T2", 2), 1: ("T1", 1)}
    assert not settled.grades.filter(uncited=True).exists()  # bob's T2 is a person's word, not a grader's bare claim
    status = step_status(group.step)
    assert (status.graded, status.pending, status.final) == (1, 0, True)
    assert waiting_jury(group) is None
    # bob's cheat call is his, in the audit queue once; the settled verdict raises none
    assert list(CheatDecision.objects.values_list("source", "author")) == [("reviewer", "bob")]
    # never shown, compared or exported as a grader's word
    shown, _ = grader_ranking(group)
    assert shown is not None and shown.grader == "b@1"
    assert run_graders(run) == ["a@1", "b@1"]
    frames = judgment_frames(project=project, run=run)  # the run's jury: only bob's own rows, none as the grader's
    assert set(frames.frame["rater"]) == {"bob"}
    # a second person's judgment changes nothing: the jury's verdict is stored once
    with transaction.atomic():
        submit_judgment(reviewer=make_user("carol"), group=group, items=[ItemInput(0, "T3"), ItemInput(1, "T1")])
    assert Verdict.objects.filter(group=group, grader=jury.grader).count() == 1


@pytest.mark.django_db
def test_no_jury_waits_where_it_falls_back_or_its_members_agree():
    project = make_project()
    for on_abstain, tiers in (("fallback", ("T1", "T3")), ("wait", ("T1", "T2"))):
        jury, _ = save_jury(
            project=project, name=f"j-{on_abstain}", members=["a@1", "b@1"], rule="agree_or_abstain", on_abstain=on_abstain
        )
        group = make_group(f"g-{on_abstain}", step=make_step(make_run(project, name=on_abstain, jury=jury)), rewards=(1, 0))
        for member, tier in zip(("a@1", "b@1"), tiers, strict=True):
            record_verdict(group=group, grader=member, status="valid", grades=[GradeInput(0, tier, 1)])
        assert waiting_jury(group) is None
        assert Verdict.objects.get(group=group, grader=jury.grader).settled_by == ""


@pytest.mark.django_db
def test_an_admin_picks_a_jury_on_the_run_page_and_an_older_version_stays_until_changed(client, alice, bob, acme):
    v1, _ = save_jury(project=acme, name="pair", members=["heuristic@1", "ext@1"], rule="majority")
    run = make_run(acme, name="rl")
    client.force_login(alice)
    page = client.get("/projects/acme/runs/rl/").content.decode()
    assert 'data-testid="policy-jury"' in page and 'value="pair@1"' in page
    form = {"baseline": run.baseline, "auto_grade": run.auto_grade, "grading_deadline_seconds": "600"}
    r = client.post("/projects/acme/runs/rl/policy/", form | {"jury": "pair@1"}, follow=True)
    assert b"Grading policy saved." in r.content
    run.refresh_from_db()
    assert run.jury == v1
    assert "Jury <code>jury:pair@1</code>" in r.content.decode()
    v2, _ = save_jury(project=acme, name="pair", members=["heuristic@1", "ext@1"], rule="mean_rank")
    page = client.get("/projects/acme/runs/rl/").content.decode()
    assert 'value="pair@1" selected' in page and "an older version" in page and 'value="pair@2"' in page
    client.post("/projects/acme/runs/rl/policy/", form | {"jury": "pair@1"})  # saving the form as shown keeps v1
    run.refresh_from_db()
    assert run.jury == v1
    client.post("/projects/acme/runs/rl/policy/", form | {"jury": ""})
    run.refresh_from_db()
    assert run.jury is None
    r = client.post("/projects/acme/runs/rl/policy/", form | {"jury": "pair@9"}, follow=True)
    assert b"Policy not changed: the project has no jury &#x27;pair@9&#x27;" in r.content
    assert v2.version == 2
    client.force_login(bob)  # a reviewer sees the policy, not the form
    assert 'data-testid="policy-jury"' not in client.get("/projects/acme/runs/rl/").content.decode()


@pytest.mark.django_db
def test_the_admin_site_shows_juries_and_graders_but_changes_none(admin_client, acme):
    jury, _ = save_jury(project=acme, name="pair", members=["heuristic@1", "ext@1"], rule="majority")
    page = admin_client.get("/admin/grading/jury/")
    assert page.status_code == 200 and b"pair" in page.content
    assert admin_client.get(f"/admin/grading/jury/{jury.pk}/change/").status_code == 200  # a view, read-only
    assert admin_client.post(f"/admin/grading/jury/{jury.pk}/change/", {"rule": "mean_rank"}).status_code == 403
    assert admin_client.get("/admin/grading/jury/add/").status_code == 403
    assert admin_client.get("/admin/grading/grader/").status_code == 200
    assert Jury.objects.get().rule == "majority"


@pytest.mark.django_db(transaction=True)
def test_grading_a_step_for_its_jury_queues_the_members_here_and_makes_the_verdicts_it_can(client, alice_token, acme):
    body = {"name": "pair", "members": ["heuristic@1", "ext@1"], "rule": "majority"}
    assert api(client, "post", "/api/v1/juries/", alice_token, body).status_code == 201
    assert api(client, "post", "/api/v1/runs/", alice_token, {"name": "rl"}).status_code == 201
    post_groups(
        client, alice_token, *[small_group(f"g{i}", run="rl", step=1, instance_id=f"t-{i}", rewards=(1, 0, 1)) for i in range(2)]
    )
    run = Run.objects.get(name="rl")
    assert not Verdict.objects.exists()  # auto-grading off, no jury yet: nothing graded
    for group in Group.objects.filter(run=run):
        record_verdict(group=group, grader="ext@1", status="valid", grades=[GradeInput(0, "T1", 1), GradeInput(2, "T2", 2)])
    assert api(client, "patch", "/api/v1/runs/rl/", alice_token, {"jury": "pair"}).status_code == 200
    r = api(client, "post", "/api/v1/steps/1/grade/?run=rl", alice_token, {})  # no backend: the jury's
    assert r.status_code == 202 and r.json()["queued"] == 2, r.content
    assert Verdict.objects.filter(grader="heuristic@1").count() == 2  # the member this desk runs
    assert Verdict.objects.filter(grader="jury:pair@1", status="valid").count() == 2
    assert step_status(run.steps.get()).graded == 2


@pytest.mark.django_db
def test_people_see_the_verdict_the_runs_method_reads_not_a_campaigns_or_a_persons():
    project = make_project()
    group = make_group("g1", step=make_step(make_run(project)), rewards=(1, 1, 0))
    record_verdict(group=group, grader="heuristic@1", status="valid", grades=[GradeInput(0, "T1", 1), GradeInput(1, "T2", 2)])
    record_verdict(
        group=group, grader="judge-b@1", status="valid", grades=[GradeInput(0, "T3", 2), GradeInput(1, "T1", 1)], bench_only=True
    )
    group = Group.objects.select_related("run").get(pk=group.pk)
    assert latest_verdict(group)[0].grader == grader_ranking(group)[0].grader == "heuristic@1"
    # a jury run: the jury's verdict once made; its members' newest while it waits
    jury, _ = save_jury(
        project=project, name="pair", members=["heuristic@1", "judge-b@1"], rule="agree_or_abstain", on_abstain="wait"
    )
    Run.objects.filter(pk=group.run_id).update(jury=jury)
    group = Group.objects.select_related("run").get(pk=group.pk)
    assert latest_verdict(group)[0].grader in {"heuristic@1", "judge-b@1"}
    record_jury_verdict(jury=jury, group=group)
    assert latest_verdict(group)[0].grader in {"heuristic@1", "judge-b@1"}  # it abstained and waits: no jury verdict
