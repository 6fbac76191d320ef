"""Backlog-aware scheduling and identical-patch settling (grading.jobs.scheduling, .settling).

Groups are made of the real mini-swe-agent trajectories (tests/helpers/real_groups.py): each
passing rollout carries its own real patch, so a group's distinct solutions are real patch
clusters; an "identical" group gives its passing rollouts one real patch, byte for byte.

Messages are captured as `_queue` sends them (one per job) and delivered here in the worst
order for the method (the last step's group first, the least signal first), a few of them
only: the deadline passes before the rest are taken, as under a backlog. Which groups got a
verdict is the scheduling rule at work.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from unittest import mock

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from grading.grader.heuristic import HeuristicGrader
from grading.jobs import recovery
from grading.jobs.grade import queue_step
from grading.jobs.policy import PolicyError, update_run_policy
from grading.jobs.scheduling import claim
from grading.jobs.tasks import grade_group_task
from grading.method.guide import RUBRIC
from grading.models import CheatDecision, GradingJob, Group, Run, Step, Verdict
from grading.verdicts.identical import identical_patches
from grading.verdicts.store import GradeInput, record_verdict
from grading.waits.progress import step_status
from reviews.selectors import labeled as labeled_selectors
from reviews.services.judgments import ItemInput, submit_judgment
from reviews.services.queue import assign
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import load_real_groups, new_file_diff

pytestmark = pytest.mark.django_db(transaction=True)

SETTLED = "identical-patches"
RUBRIC_FOURS = dict.fromkeys(RUBRIC, 4)


def real_rollouts() -> tuple[list[dict], list[dict]]:
    """The real rollouts that passed, and those that failed (8 each)."""
    rollouts = [g["rollouts"][0] for g in load_real_groups()]
    return [r for r in rollouts if r["reward"] == 1], [r for r in rollouts if r["reward"] == 0]


def real_group(uid: str, *, step: int = 1, passing: int, distinct: int, failing: int = 1, extra: bool = False) -> dict:
    """A mixed group of real rollouts: `passing` passing ones whose first `distinct` carry their
    own real patches and the rest the first one's patch (so `distinct` patch clusters), then
    `failing` failing ones. `extra`: the last passing rollout adds a scratch file to that patch."""
    passed, failed = real_rollouts()
    rollouts = []
    for i in range(passing):
        r = dict(passed[i % len(passed)])
        if i >= distinct:
            r["patch"] = passed[0]["patch"]
        rollouts.append(r)
    if extra:
        rollouts[-1]["patch"] = passed[0]["patch"] + new_file_diff("debug_issue.py", ["print('reproduce')"])
    rollouts += [dict(failed[i % len(failed)]) for i in range(failing)]
    return {
        "format": "gagar-group/1",
        "run": "r1",
        "step": step,
        "uid": uid,
        "task": {"instance_id": uid.split("@")[0], "repo": "octo/widgets", "problem_statement": "Fix it."},
        "rollouts": [{**r, "index": i} for i, r in enumerate(rollouts)],
    }


def identical_group(uid: str, *, step: int = 1, passing: int = 3) -> dict:
    return real_group(uid, step=step, passing=passing, distinct=1)


def model_calls():
    """The heuristic grader's grade(), recording which groups it was called on, in order."""
    real = HeuristicGrader.grade
    calls: list[str] = []

    def grade(self, workspace):
        calls.append(workspace.uid)
        return real(self, workspace)

    return calls, mock.patch.object(HeuristicGrader, "grade", grade)


def captured_messages(*steps: Step) -> list[dict]:
    """Queue the steps for the heuristic grader, in this order, keeping the messages `_queue`
    sends (one per job) instead of running them."""
    sent: list[dict] = []
    with mock.patch.object(grade_group_task, "delay", side_effect=lambda **kw: sent.append(kw)):
        for step in steps:
            queue_step(step=step, backend="heuristic")
    assert len(sent) == GradingJob.objects.count()
    return sent


def deliver(message: dict, task_id: str) -> str:
    """One delivery of a message to a worker: the task runs with that id (a redelivery keeps it)."""
    return grade_group_task.apply(kwargs=message, task_id=task_id).result


def uid(group_id: int) -> str:
    return Group.objects.get(pk=group_id).uid


@pytest.fixture
def backlog(acme):
    """Step 1: five groups of different signal, step 2: the most signal of all."""
    ingest_groups(
        acme,
        real_group("few@1", passing=2, distinct=2),  # 2 solutions, 2 passing
        real_group("many@1", passing=3, distinct=3),  # 3 solutions
        real_group("wide@1", passing=3, distinct=2),  # 2 solutions, 3 passing
        identical_group("same@1"),  # 1 solution: byte-identical patches
        real_group("scratch@1", passing=3, distinct=1, extra=True),  # 1 cluster, not byte-identical
        real_group("later@2", step=2, passing=4, distinct=4),
    )
    run = Run.objects.get(name="r1")
    run.grading_deadline_seconds = 60
    run.save(update_fields=["grading_deadline_seconds"])
    return run


def test_distinct_solutions_are_real_patch_clusters(backlog):
    got = dict(Group.objects.values_list("uid", "distinct_solutions"))
    assert got == {"few@1": 2, "many@1": 3, "wide@1": 2, "same@1": 1, "scratch@1": 1, "later@2": 4}


# --- the order under a deadline too short for all groups ---------------------------------------


def test_a_backlog_grades_the_earliest_step_first_and_within_it_the_most_signal(backlog):
    step1, step2 = backlog.steps.order_by("number")
    # Sent in the worst order: step 2 first, then step 1 by uid (few, many, same, scratch, wide).
    messages = captured_messages(step2, step1)
    worst_first = messages[::-1]
    calls, counting = model_calls()
    with counting:
        for n, message in enumerate(worst_first[:3]):  # the deadline passes after three gradings
            deliver(message, f"task-{n}")
    assert calls == ["many@1", "wide@1", "few@1"]  # most solutions, then most passing
    later = timezone.now() + timedelta(seconds=backlog.grading_deadline_seconds + 1)
    status = step_status(step1, now=later)
    assert (status.mixed, status.graded, status.pending, status.fallback, status.settled) == (5, 3, 0, 2, 0)
    assert not Verdict.objects.filter(group__uid__in=["same@1", "scratch@1", "later@2"]).exists()
    assert step_status(step2, now=later).fallback == 1  # the later step waits for the earlier one

    with counting:  # the rest of the messages: step 1's candidates of one cluster, then step 2
        for n, message in enumerate(worst_first[3:], 3):
            deliver(message, f"task-{n}")
    assert calls[3:] == ["same@1", "scratch@1", "later@2"]  # one cluster and three passes each: by id
    assert set(GradingJob.objects.values_list("status", flat=True)) == {"done"}
    assert len(calls) == GradingJob.objects.count() == 6  # one model call per job, one job per message


def test_with_settling_on_the_settleable_groups_go_first_and_cost_no_model_call(backlog):
    update_run_policy(run=backlog, changes={"settle_identical": True})
    step1, step2 = backlog.steps.order_by("number")
    messages = captured_messages(step2, step1)[::-1]
    calls, counting = model_calls()
    with counting:
        results = [deliver(message, f"task-{n}") for n, message in enumerate(messages[:3])]
    # same@1 and scratch@1 are the candidates (one cluster); only same@1's patches are identical.
    assert calls == ["scratch@1", "many@1"]
    assert results == ["invalid", "valid", "valid"]
    settled = Verdict.objects.get(group__uid="same@1")
    assert (settled.status, settled.settled_by, settled.grader) == ("invalid", SETTLED, "heuristic@1")
    assert "byte-identical" in settled.errors[0]
    job = GradingJob.objects.get(group__uid="same@1")
    assert (job.status, job.verdict_id) == ("failed", settled.pk)
    later = timezone.now() + timedelta(seconds=backlog.grading_deadline_seconds + 1)
    status = step_status(step1, now=later)
    assert (status.graded, status.settled, status.invalid, status.fallback) == (2, 1, 0, 3)


def test_the_group_page_says_a_group_was_settled_until_a_grader_speaks(backlog, client, alice, bob):
    update_run_policy(run=backlog, changes={"settle_identical": True})
    first = captured_messages(backlog.steps.get(number=1))[0]
    assert deliver(first, "task-0") == "invalid"  # the settleable group goes first
    assert Verdict.objects.get(group__uid="same@1").settled_by == SETTLED
    url = "/projects/acme/runs/r1/groups/same@1/"
    client.force_login(alice)
    page = client.get(url).content.decode()
    assert 'data-testid="settled"' in page and "the 3 passing rollouts' patches are byte-identical" in page
    client.force_login(bob)  # a reviewer who has not judged it browses: no verdict hidden, none to show
    page = client.get(url).content.decode()
    assert "Not graded: settled without a model call." in page and 'data-testid="show-verdict"' not in page
    # Once a grader's verdict is the newest the method reads, it is what the page shows.
    group = Group.objects.get(uid="same@1")
    grades = [GradeInput(index=i, tier="T1" if i == 0 else "T2", rank=i + 1) for i in range(3)]
    record_verdict(group=group, grader="reader@1", status="valid", grades=grades)
    client.force_login(alice)
    page = client.get(url).content.decode()
    assert 'data-testid="settled"' not in page and 'aria-label="Grader verdict"' in page
    # Groups that are graded as usual never say so.
    assert 'data-testid="settled"' not in client.get("/projects/acme/runs/r1/groups/many@1/").content.decode()


def test_settling_is_off_by_default_and_identical_patches_are_graded(backlog):
    assert Run._meta.get_field("settle_identical").default is False
    assert backlog.settle_identical is False
    step1 = backlog.steps.get(number=1)
    calls, counting = model_calls()
    with counting:
        queue_step(step=step1, backend="heuristic")  # eager Celery: each message claims the best job left
    assert "same@1" in calls and len(calls) == 5
    assert not Verdict.objects.exclude(settled_by="").exists()
    assert step_status(step1).settled == 0


def test_the_policy_flag_is_checked_set_and_read_back_over_the_api(backlog, client, alice_token):
    with pytest.raises(PolicyError, match="settle_identical must be true or false"):
        update_run_policy(run=backlog, changes={"settle_identical": "yes"})
    auth = {"HTTP_AUTHORIZATION": f"Bearer {alice_token}"}
    assert client.get("/api/v1/runs/r1/?project=acme", **auth).json()["settle_identical"] is False
    r = client.patch("/api/v1/runs/r1/?project=acme", data={"settle_identical": True}, content_type="application/json", **auth)
    assert r.status_code == 200 and r.json()["settle_identical"] is True
    assert Run.objects.get(pk=backlog.pk).settle_identical is True


def test_the_run_page_form_turns_settling_on_and_off(backlog, client, alice):
    client.force_login(alice)
    page = client.get("/projects/acme/runs/r1/").content.decode()
    assert 'data-testid="policy-settle-identical"' in page and "checked" not in page.split("policy-settle-identical")[1][:40]
    form = {"baseline": "mean", "auto_grade": "none", "grading_deadline_seconds": "60", "settle_identical_shown": "1"}
    client.post("/projects/acme/runs/r1/policy/", {**form, "settle_identical": "1"})
    assert Run.objects.get(pk=backlog.pk).settle_identical is True
    assert "byte-identical is settled without a model call" in client.get("/projects/acme/runs/r1/").content.decode()
    client.post("/projects/acme/runs/r1/policy/", form)  # unticked
    assert Run.objects.get(pk=backlog.pk).settle_identical is False


# --- one message, one job: redeliveries and the sweep --------------------------------------------


def test_a_redelivered_message_grades_nothing_twice_and_every_job_is_graded_once(backlog):
    step1 = backlog.steps.get(number=1)
    messages = captured_messages(step1)
    calls, counting = model_calls()
    with counting:
        first = deliver(messages[0], "task-a")
        assert first == "valid" and calls == ["many@1"]
        assert deliver(messages[0], "task-a") == "nothing"  # redelivered after it finished: no call
        assert calls == ["many@1"]
        for n, message in enumerate(messages[1:]):
            deliver(message, f"task-{n}")
        assert deliver(messages[3], "task-2") == "nothing"
    assert sorted(calls) == sorted(step1.groups.values_list("uid", flat=True))  # each group once
    assert Verdict.objects.count() == GradingJob.objects.count() == len(messages) == 5
    claimed = list(GradingJob.objects.values_list("claimed_by", flat=True))
    assert len(set(claimed)) == 5 and "" not in claimed  # each job claimed by one task


def test_without_a_task_id_the_named_group_is_graded_and_nothing_is_claimed(backlog):
    messages = captured_messages(backlog.steps.get(number=1))
    assert uid(claim(task_id="", **messages[0])) == "few@1"
    assert set(GradingJob.objects.values_list("claimed_by", flat=True)) == {""}


def test_a_task_that_died_mid_grading_goes_on_with_its_own_job_when_redelivered(backlog):
    step1 = backlog.steps.get(number=1)
    messages = captured_messages(step1)
    held = claim(task_id="task-dead", **messages[4])  # claimed the best job, then the worker died
    GradingJob.objects.filter(group_id=held).update(status=GradingJob.Status.RUNNING, started_at=timezone.now())
    assert uid(held) == "many@1"
    calls, counting = model_calls()
    with counting:
        assert deliver(messages[4], "task-dead") == "valid"  # acks_late: the same message, the same id
        assert deliver(messages[0], "task-other") == "valid"
    assert calls == ["many@1", "wide@1"]


def test_the_sweep_clears_the_claim_of_a_task_that_died_and_its_job_is_graded(backlog, settings):
    step1 = backlog.steps.get(number=1)
    messages = captured_messages(step1)
    held = claim(task_id="task-dead", **messages[0])
    long_ago = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + settings.GAGAR_GRADING_SWEEP_MARGIN + 60)
    GradingJob.objects.filter(group_id=held).update(status=GradingJob.Status.RUNNING, started_at=long_ago, queued_at=long_ago)
    calls, counting = model_calls()
    with counting:
        assert recovery.sweep()["resent"] == 1  # its new message runs at once (eager): it claims the best job, this one
    job = GradingJob.objects.get(group_id=held)
    assert (job.status, job.resends) == ("done", 1) and job.claimed_by not in ("", "task-dead")
    assert calls == [uid(held)]
    with counting:  # the dead task's own message, delivered late, finds its claim gone and takes another job
        assert deliver(messages[0], "task-dead") == "valid"
    assert calls == ["many@1", "wide@1"]


def test_a_claimed_job_that_never_started_is_resent_once_nobody_takes_messages(backlog, settings):
    step1 = backlog.steps.get(number=1)
    messages = captured_messages(step1)
    held = claim(task_id="task-lost", **messages[0])
    long_ago = timezone.now() - timedelta(seconds=settings.GAGAR_GRADING_QUEUED_LIMIT + 60)
    GradingJob.objects.update(queued_at=long_ago)
    with mock.patch.object(grade_group_task, "delay") as sent:
        assert recovery.sweep()["resent"] == 5
    assert sent.call_count == 5
    assert GradingJob.objects.get(group_id=held).claimed_by == ""  # the new message may claim it


def test_a_task_that_gives_up_fails_the_job_it_claimed_not_the_one_it_was_sent_for(backlog, settings):
    settings.GAGAR_GRADING_RETRIES = 1
    step1 = backlog.steps.get(number=1)
    messages = captured_messages(step1)
    from django.db import OperationalError

    from grading.jobs import grade as job_service

    with mock.patch.object(job_service, "load_workspace", side_effect=OperationalError("too many clients")):
        assert deliver(messages[0], "task-x") == "failed"  # names few@1, claimed many@1
    jobs = dict(GradingJob.objects.values_list("group__uid", "status"))
    assert jobs["many@1"] == "failed" and jobs["few@1"] == "queued"
    failed = GradingJob.objects.get(group__uid="many@1")
    assert (failed.retries, failed.claimed_by) == (1, "task-x") and "gave up after 1 retries" in failed.error


def test_two_tasks_starting_at_once_claim_different_jobs(backlog):
    if connection.vendor != "postgresql":
        pytest.skip("row locks (select_for_update skip_locked) need PostgreSQL")
    step1 = backlog.steps.get(number=1)
    messages = captured_messages(step1)
    best = GradingJob.objects.get(group__uid="many@1")
    held, release = threading.Event(), threading.Event()

    def claiming_slowly():  # another task, inside its claim's transaction on the best job
        try:
            with transaction.atomic():
                list(GradingJob.objects.filter(pk=best.pk).select_for_update())
                held.set()
                release.wait(30)
        finally:
            connections.close_all()

    other = threading.Thread(target=claiming_slowly)
    other.start()
    try:
        assert held.wait(30)
        assert uid(claim(task_id="task-b", **messages[0])) == "wide@1"  # skips the locked row, no wait
    finally:
        release.set()
        other.join(30)
    assert uid(claim(task_id="task-c", **messages[1])) == "many@1"


# --- settling, the step's status and the exports ------------------------------------------------


def test_identical_means_byte_identical_and_two_passes_or_more():
    patch = "diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1 +1 @@\n-x\n+y\n"
    assert identical_patches([patch, patch, patch])
    assert not identical_patches([patch, patch + " "])
    assert not identical_patches([patch, patch.replace("\n", "\r\n")])
    assert not identical_patches([patch])
    assert not identical_patches([])


@pytest.fixture
def settled_step(acme, bob):
    """Step 1 of run r1 with settling on: same@1 settled (a leak in one trajectory), few@1 graded;
    bob judged both with every rubric score."""
    group = identical_group("same@1", passing=2)
    group["rollouts"][1]["messages"] = [
        *group["rollouts"][1]["messages"],
        {
            "role": "assistant",
            "content": "THOUGHT: see how upstream fixed it\n\n```bash\ngit log --all --oneline\n```",
            "action": "git log --all --oneline",
            "observation": "abc1234 Fix it upstream",
        },
    ]
    ingest_groups(acme, group, real_group("few@1", passing=2, distinct=2))
    run = Run.objects.get(name="r1")
    update_run_policy(run=run, changes={"settle_identical": True})
    step = run.steps.get()
    queue_step(step=step, backend="heuristic")
    for g in Group.objects.filter(run=run):
        assign(group=g, reviewer=bob)
        items = [ItemInput(i, "T1" if i == 0 else "T2", i + 1, scores=RUBRIC_FOURS) for i in range(2)]
        submit_judgment(reviewer=bob, group=g, items=items)
    return step


def test_a_settled_group_still_gets_the_prescreens(settled_step):
    leak = CheatDecision.objects.get(source="prescreen")
    assert (leak.rollout.group.uid, leak.rollout.index) == ("same@1", 1)
    assert "history_search" in leak.reason


def test_the_step_status_api_and_page_count_settled_groups(settled_step, client, bob, trainer_token):
    status = step_status(settled_step)
    assert (status.mixed, status.graded, status.settled, status.invalid, status.fallback, status.final) == (
        2,
        1,
        1,
        0,
        1,
        True,
    )
    body = client.get("/api/v1/steps/1/?project=acme&run=r1", HTTP_AUTHORIZATION=f"Bearer {trainer_token}").json()
    assert (body["graded"], body["settled"], body["fallback"], body["invalid"]) == (1, 1, 1, 0)
    client.force_login(bob)
    page = client.get("/projects/acme/runs/r1/steps/1/grading/").content.decode()
    assert 'id="step-settled">1<' in page and 'id="step-graded">1<' in page
    assert "(1 settled)" in page


def test_a_settled_verdict_is_no_graders_word_but_the_labeled_export_shows_why(settled_step):
    settled = Verdict.objects.get(group__uid="same@1")
    graded = Verdict.objects.get(group__uid="few@1")
    assert list(Verdict.objects.by_graders()) == [graded]  # what agreement and calibration read
    lines = {line["uid"]: line for line in labeled_selectors.labeled_lines(run=settled_step.run)}
    assert [(v["grader"], v["status"], v["settled_by"]) for v in lines["same@1"]["verdicts"]] == [
        ("heuristic@1", "invalid", SETTLED)
    ]
    assert [v["settled_by"] for v in lines["few@1"]["verdicts"]] == [""]
    assert settled.pk not in {v.pk for v in Verdict.objects.by_graders()}
    sft = list(labeled_selectors.sft_examples(run=settled_step.run))
    assert [e["metadata"]["uid"] for e in sft] == ["few@1"]  # the settled group teaches no grader


def test_a_settled_verdict_stays_out_of_calibration(settled_step):
    from reviews.selectors.calibration import judgment_frames

    frames = judgment_frames(project=settled_step.run.project, run=settled_step.run)
    assert set(frames.frame["uid"]) == {"few@1"} and frames.graders == ["heuristic@1"]


def test_a_jury_whose_member_settled_falls_back_settled_too(acme):
    from grading.jobs.grade import queue_jury_step
    from grading.registry.juries import save_jury
    from tests.helpers.juries import grade

    ingest_groups(acme, identical_group("same@1"))
    run = Run.objects.get(name="r1")
    save_jury(project=acme, name="pair", members=["heuristic@1", "ext-a@1"], rule="majority", max_gap=1, on_abstain="fallback")
    run = update_run_policy(run=run, changes={"jury": "pair", "settle_identical": True})
    step = run.steps.get()
    calls, counting = model_calls()
    with counting:
        queue_jury_step(step=step, jury=run.jury)
    assert not calls and Verdict.objects.get(grader="heuristic@1").settled_by == SETTLED
    grade(step.groups.get(), "ext-a@1", {0: "T1", 1: "T2", 2: "T2"})  # the other member posts a valid verdict
    jury_verdict = Verdict.objects.get(grader=run.jury.grader)
    assert (jury_verdict.status, jury_verdict.settled_by) == ("invalid", SETTLED)
    assert (step_status(step).settled, step_status(step).graded) == (1, 0)
    assert list(Verdict.objects.by_graders().values_list("grader", flat=True)) == ["ext-a@1"]
