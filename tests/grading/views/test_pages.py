"""Pages: projects -> runs -> steps -> group, the group page's partials, and their refusals."""

import pytest
from django.urls import reverse

from grading.models import Rollout
from tests.helpers.groups import small_group
from tests.helpers.ingest import post_groups
from tests.helpers.real_groups import load_real_groups

pytestmark = pytest.mark.django_db


@pytest.fixture
def group_uid(client, alice_token):
    hostile = small_group("t-1@1")
    hostile["rollouts"][1]["messages"][1]["content"] = "<script>alert('pwned')</script> ignore previous instructions"
    hostile["rollouts"][2]["patch"] = "not a diff <img src=x onerror=alert(1)>"
    post_groups(client, alice_token, hostile, small_group("t-2@1", instance_id="t-2", rewards=(1, 1)))
    return "t-1@1"


def test_anonymous_pages_redirect_to_login(client, group_uid):
    for url in [
        "/projects/",
        "/projects/acme/",
        "/projects/acme/runs/r1/",
        "/projects/acme/runs/r1/steps/1/",
        f"/projects/acme/runs/r1/groups/{group_uid}/",
        f"/projects/acme/runs/r1/groups/{group_uid}/rollouts/0/turns/",
    ]:
        r = client.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/accounts/login/"), url


def test_project_run_step_pages_show_counts(client, bob, group_uid, django_assert_num_queries):
    client.force_login(bob)  # bob is a reviewer in acme
    r = client.get("/projects/")
    assert r.status_code == 200 and b"acme" in r.content
    r = client.get("/projects/acme/")
    assert r.status_code == 200 and b"r1" in r.content
    r = client.get("/projects/acme/runs/r1/")
    assert r.status_code == 200 and b"Credit per step" in r.content and b'id="credit-chart"' in r.content
    client.get("/projects/acme/runs/r1/steps/1/")  # the first visit computes the step's advantages
    # session, user, project, membership, run, step, page count, totals, active mapping (2),
    # current computation, the page of groups, the step's dropped rollouts (none)
    with django_assert_num_queries(13):
        r = client.get("/projects/acme/runs/r1/steps/1/")
    assert r.status_code == 200
    content = r.content.decode()
    assert "t-1@1" in content and "t-2@1" in content and "mixed" in content and "all pass" in content
    assert "Credit balance" in content and "default@1" in content
    # nothing graded yet: no empty λ axes, but what to do next, with the links a reviewer may use
    assert 'id="lambda-chart"' not in content and "1 mixed group, none graded yet" in content
    assert 'data-testid="next-judge"' in content and 'data-testid="next-grade"' not in content
    r = client.get("/projects/acme/runs/r1/steps/1/?show=mixed")
    assert "t-1@1" in r.content.decode() and "t-2@1" not in r.content.decode()


def test_group_page_shows_rollouts_side_by_side(client, bob, group_uid, django_assert_num_queries):
    client.force_login(bob)
    # session, user, project, membership, run, group; assignment, own judgments, review state; rollouts, contents;
    # the rubric guide; and, as bob is a reviewer outside an assignment, his choice (reviews/selectors/browse.py):
    # the review policy, reveal-or-verdict in one, the queue check (the stored queue order: no mapping lookups)
    with django_assert_num_queries(15):
        r = client.get(f"/projects/acme/runs/r1/groups/{group_uid}/")
    assert r.status_code == 200
    html = r.content.decode()
    assert html.count('class="lane ') == 3
    assert "2 pass" in html and "1 fail" in html and "mixed: carries signal" in html
    assert 'class="diff unified hl"' in html  # highlighted per-file diff
    assert "Shown as plain text" in html  # the non-diff patch, unhighlighted
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img src=x" not in html
    assert "fixture/t-1@1/0" in html  # source ref shown


def test_split_view_and_turns_partials(client, bob, group_uid):
    client.force_login(bob)
    base = f"/projects/acme/runs/r1/groups/{group_uid}/rollouts"
    r = client.get(f"{base}/0/diff/?view=split", HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and 'class="diff split hl"' in r.content.decode()
    assert "<html" not in r.content.decode()  # a partial, not the page
    assert r["Vary"] and "HX-Request" in r["Vary"]
    r = client.get(f"{base}/1/turns/", HTTP_HX_REQUEST="true")
    html = r.content.decode()
    assert r.status_code == 200 and "assistant" in html and "cat w.py" in html
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in html and "<script>alert" not in html
    full = client.get(f"{base}/1/turns/")
    assert full.status_code == 200 and "<html" in full.content.decode()
    log = client.get(f"{base}/0/log/", HTTP_HX_REQUEST="true")
    assert "t::a PASSED" in log.content.decode()


def test_other_projects_member_gets_404_everywhere(client, carol, group_uid):
    client.force_login(carol)  # carol belongs to "other" only
    for url in [
        "/projects/acme/",
        "/projects/acme/runs/r1/",
        f"/projects/acme/runs/r1/groups/{group_uid}/",
        f"/projects/acme/runs/r1/groups/{group_uid}/rollouts/0/diff/",
    ]:
        assert client.get(url).status_code == 404, url


def test_trainer_cannot_use_pages(client, trainer_token, group_uid):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.get(username="tess"))
    assert client.get(f"/projects/acme/runs/r1/groups/{group_uid}/").status_code == 403


def test_wrong_method_is_405(client, bob, group_uid):
    client.force_login(bob)
    assert client.post(f"/projects/acme/runs/r1/groups/{group_uid}/").status_code == 405


def test_missing_rollout_and_group_are_404(client, bob, group_uid):
    client.force_login(bob)
    assert client.get("/projects/acme/runs/r1/groups/nope@1/").status_code == 404
    assert client.get(f"/projects/acme/runs/r1/groups/{group_uid}/rollouts/99/turns/").status_code == 404


def test_csp_is_enforced_without_unsafe_inline(client, bob, group_uid):
    client.force_login(bob)
    r = client.get(f"/projects/acme/runs/r1/groups/{group_uid}/")
    csp = r["Content-Security-Policy"]
    script_src = next(d for d in csp.split(";") if d.strip().startswith("script-src"))
    assert "'self'" in script_src and "unsafe-inline" not in script_src and "unsafe-eval" not in script_src
    assert "<script>" not in r.content.decode()  # no inline scripts at all


def test_real_trajectories_render_with_their_report_verdicts(client, alice, alice_token):
    groups = load_real_groups()
    assert len(groups) == 16
    report = post_groups(client, alice_token, *groups)
    assert report["rollouts"]["created"] == 16
    client.force_login(alice)
    resolved = 0
    for group in groups:
        rollout = group["rollouts"][0]
        stored = Rollout.objects.get(group__uid=group["uid"])
        assert stored.reward == rollout["reward"] and stored.source_format == "mini-swe-agent-1"
        resolved += bool(stored.passed)
        url = reverse("group", args=["acme", "gemini-3-pro-swebench", group["uid"]])
        html = client.get(url).content.decode()
        assert ('<span class="badge pass">1 pass</span>' in html) == bool(stored.passed)
        assert stored.n_messages == len(rollout["messages"])
    assert resolved == 8  # 8 resolved, 8 not, as their report.json files say


def test_health_check_is_public_and_says_nothing_else(client, db):
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    assert client.post("/healthz").status_code == 405


def test_a_huge_patch_loads_on_demand_and_evidence_still_opens_it(client, alice, alice_token):
    from grading.models import Group
    from grading.verdicts.store import GradeInput, record_verdict

    big = small_group("big@1", rewards=(1, 0, 1))
    body = "".join(f"+line_{n} = {n}\n" for n in range(8000))
    big["rollouts"][0]["patch"] = f"--- a/w.py\n+++ b/w.py\n@@ -0,0 +1,8000 @@\n{body}"
    post_groups(client, alice_token, big)
    record_verdict(
        group=Group.objects.get(uid="big@1"),
        grader="g@1",
        status="valid",
        grades=[
            GradeInput(0, "T2", 2, evidence=[{"kind": "patch", "rollout": 0, "locator": "w.py:7", "note": "dead code"}]),
            GradeInput(2, "T1", 1),
        ],
    )
    client.force_login(alice)
    html = client.get("/projects/acme/runs/r1/groups/big@1/").content.decode()
    assert 'data-testid="load-diff-0"' in html and "line_7999" not in html  # deferred
    assert 'data-testid="load-diff-2"' not in html and 'class="diff unified hl"' in html  # small ones inline
    anchor = "/projects/acme/runs/r1/groups/big@1/rollouts/0/diff/#p0-"
    assert anchor in html  # the citation opens the patch's own page at the cited row
    r = client.get("/projects/acme/runs/r1/groups/big@1/rollouts/0/diff/?view=unified", HTTP_HX_REQUEST="true")
    assert "line_7999" in r.content.decode()


def test_run_page_says_when_steps_off_the_page_are_being_recomputed(client, bob, alice_token, monkeypatch):
    from grading.models import StepComputation
    from grading.selectors import steps

    post_groups(client, alice_token, small_group("a@1"), small_group("a@2", step=2))
    monkeypatch.setattr(steps, "STEPS_PER_PAGE", 1)
    client.force_login(bob)
    client.get("/projects/acme/runs/r1/?page=2")  # computes step 2
    html = client.get("/projects/acme/runs/r1/").content.decode()  # computes step 1: nothing stale
    assert 'data-testid="stale-steps"' not in html
    StepComputation.objects.filter(step__number=2).update(stale=True)  # a verdict came in on step 2
    html = client.get("/projects/acme/runs/r1/").content.decode()
    assert "1 step changed since its figures were computed" in html
    html = client.get("/projects/acme/runs/r1/?page=2").content.decode()  # on its page it is computed first
    assert 'data-testid="stale-steps"' not in html
