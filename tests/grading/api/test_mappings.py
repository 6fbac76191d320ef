"""The factor-mapping API: list, create, active mapping with its history, activate.

People: alice is admin of acme; bob is a reviewer in acme (reads, cannot write); carol is
admin of "other" only, so acme's mappings are 404 for her; tess's trainer token reads
mappings (she passes them to the export) but cannot write.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from grading.method.export import COLUMNS
from grading.method.services.activation import activate_mapping
from grading.method.services.mappings import default_mapping
from grading.models import FactorMapping, Group, MappingActivation, Run, Step, StepComputation
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import post_groups

URL = "/api/v1/mappings/"
STEEP = {"T1": 1, "T2": [0.6, 0.4], "T3": 0.2}


def post(client, url, data, **headers):
    return client.post(url, data=json.dumps(data), content_type="application/json", **headers)


def token(secret: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Token {secret}"}


@pytest.fixture
def default(db):
    # The data migration creates it, but a transactional test before this one may have flushed it.
    return default_mapping()


@pytest.fixture
def runs(acme):
    r1, r2 = Run.objects.create(project=acme, name="r1"), Run.objects.create(project=acme, name="r2")
    for run in (r1, r2):
        Step.objects.create(run=run, number=1)
    return r1, r2


@pytest.fixture
def steep(acme, alice):
    return FactorMapping.objects.create(project=acme, name="steep", version=1, bands=STEEP, created_by=alice)


@pytest.fixture
def theirs(other_project, carol):
    return FactorMapping.objects.create(project=other_project, name="theirs", version=1, bands=STEEP, created_by=carol)


# --- reading ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_list_shows_builtin_and_own_mappings_with_the_runs_they_are_active_for(client, alice, default, runs, steep, theirs):
    _r1, r2 = runs
    activate_mapping(run=r2, mapping=steep, user=alice, reason="try a steeper T2 band")
    client.force_login(alice)
    r = client.get(f"{URL}?project=acme")
    assert r.status_code == 200
    by_label = {m["label"]: m for m in r.json()}
    assert list(by_label) == ["default@1", "steep@1"]  # carol's "theirs" is not acme's to see
    assert by_label["default@1"]["active_runs"] == ["r1"]  # never activated: the built-in default applies
    assert by_label["default@1"]["project"] is None and by_label["default@1"]["source"] == "default"
    assert by_label["default@1"]["bands"] == {"T1": [1.0, 1.0], "T2": [0.85, 0.70], "T3": [0.5, 0.5]}
    mine = by_label["steep@1"]
    assert (mine["id"], mine["name"], mine["version"], mine["project"]) == (steep.pk, "steep", 1, "acme")
    assert (mine["active_runs"], mine["created_by"], mine["source"], mine["fit_summary"]) == (["r2"], "alice", "manual", None)


@pytest.mark.django_db
def test_fit_summary_in_the_list_and_the_full_fit_on_the_mapping(client, bob, acme, default):
    fit = {
        "f": [1.0, 0.8, 0.5],
        "k": 1.0,
        "q": [1.0, 0.75, 0.5],
        "counts": [[40, 5, 1], [6, 30, 4], [1, 3, 10]],
        "intervals": [[1, 1], [0.7, 0.9], [0.4, 0.6]],
        "n_boot": 1000,
        "n_groups": 25,
        "judgment_ids": list(range(100)),
    }
    calibrated = FactorMapping.objects.create(
        project=acme,
        name="calibrated",
        version=1,
        source="calibrated",
        bands={"T1": 1.0, "T2": 0.8, "T3": 0.5},
        fit=fit,
        note="fitted on steps 1-40",
    )
    client.force_login(bob)  # a reviewer reads mappings
    listed = {m["label"]: m for m in client.get(f"{URL}?project=acme").json()}["calibrated@1"]
    assert listed["fit_summary"] == {
        "f": [1.0, 0.8, 0.5],
        "k": 1.0,
        "q": [1.0, 0.75, 0.5],
        "intervals": fit["intervals"],
        "n_boot": 1000,
        "n_groups": 25,
        "n_judgments": 100,
    }
    assert "fit" not in listed and listed["note"] == "fitted on steps 1-40"
    detail = client.get(f"{URL}{calibrated.pk}/?project=acme").json()
    assert detail["fit"] == fit and detail["label"] == "calibrated@1"


@pytest.mark.django_db
@pytest.mark.parametrize("size", [1, 6])
def test_list_query_count_does_not_grow_with_mappings_or_runs(client, alice, acme, default, django_assert_num_queries, size):
    for i in range(size):
        run = Run.objects.create(project=acme, name=f"run-{i}")
        mapping = FactorMapping.objects.create(project=acme, name=f"m{i}", version=1, bands=STEEP, created_by=alice)
        if i % 2:
            MappingActivation.objects.create(run=run, mapping=mapping, activated_by=alice, reason="x")
    client.force_login(alice)
    # session, user, project, membership, mappings (with project and author), runs (with active mapping)
    with django_assert_num_queries(6):
        r = client.get(f"{URL}?project=acme")
    assert len(r.json()) == size + 1
    assert sum(len(m["active_runs"]) for m in r.json()) == size


@pytest.mark.django_db
def test_trainer_token_reads_mappings_in_pinned_queries(client, trainer_token, default, runs, django_assert_num_queries):
    client.get(f"{URL}", **token(trainer_token))  # first use stamps the token
    # token, project + membership (one check for "view" or "export"), mappings, runs
    with django_assert_num_queries(5):
        r = client.get(f"{URL}", **token(trainer_token))
    assert r.status_code == 200 and [m["label"] for m in r.json()] == ["default@1"]


@pytest.mark.django_db
def test_active_mapping_and_its_history(client, alice, bob, default, runs, steep):
    _r1, _ = runs
    client.force_login(alice)
    fresh = client.get(f"{URL}active/?project=acme&run=r1").json()
    assert (fresh["run"], fresh["mapping"]["label"], fresh["activation"], fresh["history"]) == ("r1", "default@1", None, [])

    r = post(client, f"{URL}{steep.pk}/activate/?project=acme", {"run": "r1", "reason": "steeper T2 band"})
    assert r.status_code == 201, r.content
    r = post(client, f"{URL}{default.pk}/activate/?project=acme", {"run": "r1", "reason": "back: steep@1 was too harsh"})
    assert r.status_code == 201, r.content

    client.force_login(bob)
    now = client.get(f"{URL}active/?project=acme&run=r1").json()
    assert now["mapping"]["label"] == "default@1"
    assert [(h["mapping"]["label"], h["activated_by"], h["reason"]) for h in now["history"]] == [
        ("default@1", "alice", "back: steep@1 was too harsh"),
        ("steep@1", "alice", "steeper T2 band"),
    ]
    assert now["activation"] == now["history"][0]
    assert client.get(f"{URL}active/?project=acme").status_code == 400
    assert client.get(f"{URL}active/?project=acme&run=nope").status_code == 404


# --- creating -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_admin_creates_new_versions_and_they_stay_immutable(client, alice, carol, default):
    client.force_login(alice)
    r = post(client, f"{URL}?project=acme", {"name": "steep", "bands": STEEP, "note": "T2 matters less"})
    assert r.status_code == 201, r.content
    first = r.json()
    assert (first["label"], first["project"], first["source"], first["created_by"]) == ("steep@1", "acme", "manual", "alice")
    assert first["bands"] == {"T1": [1.0, 1.0], "T2": [0.6, 0.4], "T3": [0.2, 0.2]}  # stored as [hi, lo]
    assert r["Location"] == f"{URL}{first['id']}/?project=acme"
    second = post(client, f"{URL}?project=acme", {"name": "steep", "bands": {**STEEP, "T3": 0.3}}).json()
    assert second["label"] == "steep@2"

    stored = FactorMapping.objects.get(pk=first["id"])
    assert (stored.project.name, stored.version, stored.created_by, stored.note) == ("acme", 1, alice, "T2 matters less")
    assert stored.spec.band("T2") == (0.6, 0.4)

    for method in ("put", "patch", "delete"):  # a change is a new version
        assert (
            getattr(client, method)(f"{URL}{first['id']}/?project=acme", data="{}", content_type="application/json").status_code
            == 405
        )
    stored.refresh_from_db()
    assert stored.bands == first["bands"]

    # versions count per project: carol's "steep" is version 1 of hers (acme's do not show), and acme does not see it
    client.force_login(carol)
    assert post(client, f"{URL}?project=other", {"name": "steep", "bands": STEEP}).json()["label"] == "steep@1"
    client.force_login(alice)
    assert [m["label"] for m in client.get(f"{URL}?project=acme").json()] == ["default@1", "steep@1", "steep@2"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "bands, field, message",
    [
        ({"T1": [1, 1], "T2": [1.2, 0.7], "T3": [0.5, 0.5]}, "T2", "0 < lo <= hi <= 1"),  # f above 1
        ({"T1": [1, 1], "T2": [0.85, 0.7], "T3": 0}, "T3", "0 < lo <= hi <= 1"),  # f must be above 0
        ({"T1": [1, 1], "T2": [0.85, 0.7], "T3": -0.5}, "T3", "0 < lo <= hi <= 1"),
        ({"T1": [1, 1], "T2": [0.7, 0.85], "T3": 0.5}, "T2", "hi=0.7, lo=0.85"),  # hi < lo
        ({"T1": "high", "T2": [0.85, 0.7], "T3": 0.5}, "T1", "two numbers"),
        ({"T1": [1, 1, 1], "T2": [0.85, 0.7], "T3": 0.5}, "T1", "two numbers"),
        ({"T1": True, "T2": [0.85, 0.7], "T3": 0.5}, "T1", "two numbers"),
        ({"T1": 1, "T2": 0.8}, None, "exactly the tiers T1, T2, T3"),
        ({"T1": 1, "T2": 0.8, "T3": 0.5, "T4": 0.1}, None, "exactly the tiers T1, T2, T3"),
        ([1, 0.8, 0.5], None, "must be an object"),
    ],
)
def test_bad_bands_are_a_400_naming_the_field(client, alice, acme, default, bands, field, message):
    client.force_login(alice)
    r = post(client, f"{URL}?project=acme", {"name": "bad", "bands": bands})
    assert r.status_code == 400
    errors = r.json()["fields"]["bands"]
    if field is None:
        assert message in errors[0]
    else:
        assert list(errors) == [field] and message in errors[field][0]
    assert not FactorMapping.objects.filter(name="bad").exists()


@pytest.mark.django_db
def test_other_bad_create_bodies(client, alice, acme, default):
    client.force_login(alice)
    r = post(client, f"{URL}?project=acme", {"name": "not a slug!", "bands": STEEP})
    assert r.status_code == 400 and "name" in r.json()["fields"]
    r = post(client, f"{URL}?project=acme", {"bands": STEEP})
    assert r.status_code == 400 and list(r.json()["fields"]) == ["name"]
    nan = '{"name": "nan", "bands": {"T1": NaN, "T2": 0.8, "T3": 0.5}}'
    assert client.post(f"{URL}?project=acme", data=nan, content_type="application/json").status_code == 400
    assert client.post(f"{URL}?project=acme", data={"name": "form", "bands": "{}"}).status_code == 415
    assert post(client, URL, {"name": "x", "bands": STEEP}).status_code == 400  # a session names its project
    assert FactorMapping.objects.filter(project=acme).count() == 0


# --- activating ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_activation_refuses_bad_bodies_and_a_no_op(client, alice, default, runs, steep):
    client.force_login(alice)
    url = f"{URL}{steep.pk}/activate/?project=acme"
    r = post(client, url, {"run": "r1"})
    assert r.status_code == 400 and list(r.json()["fields"]) == ["reason"]
    assert post(client, url, {"run": "r1", "reason": "   "}).status_code == 400
    r = post(client, url, {"reason": "why not"})
    assert r.status_code == 400 and list(r.json()["fields"]) == ["run"]
    r = post(client, url, {"run": "nope", "reason": "why not"})
    assert r.status_code == 400 and "no run 'nope' in acme" in r.json()["fields"]["run"][0]
    r = post(client, f"{URL}{default.pk}/activate/?project=acme", {"run": "r1", "reason": "again"})
    assert r.status_code == 409 and "default@1 is already active" in r.json()["detail"]
    assert post(client, f"{URL}99999/activate/?project=acme", {"run": "r1", "reason": "x"}).status_code == 404
    assert not MappingActivation.objects.exists()

    r = post(client, url, {"run": "r1", "reason": "steeper T2 band"})
    assert r.status_code == 201
    body = r.json()
    assert (body["run"], body["mapping"], body["activated_by"], body["reason"]) == (
        "r1",
        {"id": steep.pk, "label": "steep@1"},
        "alice",
        "steeper T2 band",
    )
    assert r["Location"] == f"{URL}active/?project=acme&run=r1"
    activation = MappingActivation.objects.get()
    assert (activation.run.name, activation.mapping, activation.activated_by, activation.reason) == (
        "r1",
        steep,
        alice,
        "steeper T2 band",
    )
    assert runs[1].mapping_activations.count() == 0  # r2 keeps the default


def calibrated(project, counts, n_groups, version=1):
    fit = {"f": [1.0, 0.8, 0.5], "k": 1.0, "q": [1.0, 0.75, 0.5], "counts": counts, "n_boot": 1000, "n_groups": n_groups}
    return FactorMapping.objects.create(
        project=project,
        name="acme-calibrated",
        version=version,
        source="calibrated",
        bands={"T1": 1.0, "T2": 0.8, "T3": 0.5},
        fit=fit,
    )


@pytest.mark.django_db
def test_a_calibrated_mapping_below_the_minimum_is_a_409_naming_its_evidence_until_forced(client, alice, acme, default, runs):
    thin = calibrated(acme, [[2, 0, 0], [0, 1, 2], [0, 0, 1]], n_groups=2)
    client.force_login(alice)
    url = f"{URL}{thin.pk}/activate/?project=acme"
    r = post(client, url, {"run": "r1", "reason": "looks fine"})
    assert r.status_code == 409 and r["Content-Type"] == "application/json"
    body = r.json()
    assert body["detail"] == (
        "acme-calibrated@1 rests on too little evidence: 2 judged mixed groups, 30 needed; T1 seen in "
        "2 pairs, 5 needed; T2 seen in 3 pairs, 5 needed; T3 seen in 1 pair, 5 needed. "
        'Send "force": true to activate it anyway.'
    )
    assert body["evidence"] == {
        "sufficient": False,
        "n_groups": 2,
        "tier_pairs": {"T1": 2, "T2": 3, "T3": 1},
        "minimum": {"groups": 30, "tier_pairs": 5},
        "shortfalls": body["evidence"]["shortfalls"],
    }
    assert post(client, url, {"run": "r1", "reason": "x", "force": "maybe"}).status_code == 400
    assert not MappingActivation.objects.exists()

    r = post(client, url, {"run": "r1", "reason": "few groups, but the run needs it now", "force": True})
    assert r.status_code == 201 and r.json()["overrode_minimum"] is True
    activation = MappingActivation.objects.get()
    assert (activation.mapping, activation.overrode_minimum, activation.reason) == (
        thin,
        True,
        "few groups, but the run needs it now",
    )
    history = client.get(f"{URL}active/?project=acme&run=r1").json()["history"]
    assert [(h["mapping"]["label"], h["overrode_minimum"]) for h in history] == [("acme-calibrated@1", True)]


@pytest.mark.django_db
def test_a_fit_that_meets_the_projects_minimum_and_a_hand_set_mapping_need_no_force(client, alice, acme, default, runs, steep):
    from grading.method.minimums import save_minimum

    sound = calibrated(acme, [[20, 4, 1], [3, 12, 2], [0, 2, 6]], n_groups=31)
    client.force_login(alice)
    r = post(client, f"{URL}{sound.pk}/activate/?project=acme", {"run": "r1", "reason": "31 groups"})
    assert r.status_code == 201 and r.json()["overrode_minimum"] is False
    assert post(client, f"{URL}{steep.pk}/activate/?project=acme", {"run": "r2", "reason": "by hand"}).status_code == 201
    # a project that asks for less lets a small fit through
    thin = calibrated(acme, [[2, 0, 0], [0, 1, 2], [0, 0, 1]], n_groups=2, version=2)
    save_minimum(project=acme, user=alice, groups=2, tier_pairs=1)
    r = post(client, f"{URL}{thin.pk}/activate/?project=acme", {"run": "r1", "reason": "acme asks for 2 groups"})
    assert r.status_code == 201 and r.json()["overrode_minimum"] is False
    assert list(MappingActivation.objects.values_list("overrode_minimum", flat=True)) == [False, False, False]


@pytest.mark.django_db
def test_refusals(client, alice, alice_token, bob, carol, trainer_token, default, runs, steep, theirs):
    activate = f"{URL}{steep.pk}/activate/?project=acme"
    body = {"run": "r1", "reason": "because"}
    new = {"name": "sneaky", "bands": STEEP}

    # anonymous: 401 everywhere, with a challenge for the token scheme
    for r in (
        client.get(f"{URL}?project=acme"),
        client.get(f"{URL}active/?project=acme&run=r1"),
        client.get(f"{URL}{steep.pk}/?project=acme"),
        post(client, f"{URL}?project=acme", new),
        post(client, activate, body),
    ):
        assert r.status_code == 401 and r["WWW-Authenticate"].startswith("Token")

    # tess's trainer token reads but cannot write
    tess = token(trainer_token)
    assert client.get(URL, **tess).status_code == 200
    assert client.get(f"{URL}active/?run=r1", **tess).status_code == 200
    assert post(client, URL, new, **tess).status_code == 403
    assert post(client, f"{URL}{steep.pk}/activate/", body, **tess).status_code == 403

    # bob, a reviewer, reads but cannot write
    client.force_login(bob)
    assert client.get(f"{URL}?project=acme").status_code == 200
    assert post(client, f"{URL}?project=acme", new).status_code == 403
    r = post(client, activate, body)
    assert r.status_code == 403 and "reviewer" in r.json()["detail"]

    # carol is admin of "other" only: acme is 404 for her, and so are acme's mappings seen from "other"
    client.force_login(carol)
    assert client.get(f"{URL}?project=acme").status_code == 404
    assert post(client, activate, body).status_code == 404
    assert post(client, f"{URL}?project=acme", new).status_code == 404
    assert client.get(f"{URL}{steep.pk}/?project=other").status_code == 404
    assert post(client, f"{URL}{steep.pk}/activate/?project=other", body).status_code == 404
    # and acme's admin cannot reach carol's mapping either, nor use an acme token for "other"
    client.force_login(alice)
    assert post(client, f"{URL}{theirs.pk}/activate/?project=acme", body).status_code == 404
    assert client.get(f"{URL}{theirs.pk}/?project=acme").status_code == 404
    assert client.get(f"{URL}?project=other", **token(alice_token)).status_code == 404

    # wrong methods
    assert client.put(f"{URL}?project=acme", data="{}", content_type="application/json").status_code == 405
    assert client.get(activate).status_code == 405
    assert post(client, f"{URL}active/?project=acme&run=r1", {}).status_code == 405
    assert client.delete(f"{URL}{steep.pk}/?project=acme").status_code == 405

    assert not MappingActivation.objects.exists()
    assert not FactorMapping.objects.filter(name="sneaky").exists()
    assert FactorMapping.objects.filter(pk=steep.pk).exists()


# --- end to end: activation through the API changes the trainer export as docs/method.md says ----

EXPORT = "/api/v1/advantages/"


def export(client, secret: str, **params) -> tuple[pd.DataFrame, str]:
    query = "&".join(f"{k}={v}" for k, v in {"run": "r1", "format": "jsonl", **params}.items())
    r = client.get(f"{EXPORT}?{query}", **token(secret))
    assert r.status_code == 200, getattr(r, "content", b"")[:300]
    rows = [json.loads(line) for line in b"".join(r.streaming_content).splitlines()]
    return pd.DataFrame(rows, columns=COLUMNS), r["X-Gagar-Mapping"]


def assert_method_invariants(frame: pd.DataFrame) -> None:
    """docs/method.md §4 on every group: sums kept, failing rollouts untouched, preference ratios kept."""
    for _, group in frame.groupby(["step", "uid"]):
        passing, failing = group[group.passed], group[~group.passed]
        assert abs(group.redistributed_advantage.sum() - group.advantage.sum()) < 1e-9
        assert abs(passing.redistributed_advantage.sum() - passing.advantage.sum()) < 1e-9  # invariant 1
        assert failing.redistributed_advantage.tolist() == failing.advantage.tolist()  # invariant 2
        if group.status.iloc[0] == "graded" and len(passing) > 1:  # invariant 3
            np.testing.assert_allclose(
                passing.redistributed_advantage / passing.redistributed_advantage.iloc[0],
                passing.factor / passing.factor.iloc[0],
                rtol=0,
                atol=1e-9,
            )


@pytest.mark.django_db(transaction=True)
def test_activating_through_the_api_changes_graded_groups_only_and_the_old_export_stays(
    client, alice, alice_token, trainer_token
):
    default = default_mapping()
    post_groups(
        client,
        alice_token,
        small_group("g1@1", rewards=(1, 1, 1, 0, 0, 0)),  # the docs/method.md worked example
        small_group("g2@1", instance_id="t-2", rewards=(1, 0, 1, 1, 0)),  # graded, two T2s share the band
        small_group("g3@1", instance_id="t-3", rewards=(1, 0)),  # no verdict yet: fallback
        small_group("g4@1", instance_id="t-4", rewards=(1, 1, 0)),  # invalid verdict: fallback
        small_group("g5@1", instance_id="t-5", rewards=(1, 1)),  # all pass: filtered
        small_group("g6@1", instance_id="t-6", rewards=(0, 0, 0)),  # all fail: filtered
        small_group("g7@2", step=2, instance_id="t-7", rewards=(0, 1, 1, 0)),  # graded, another step
    )
    groups = {g.uid: g for g in Group.objects.all()}
    record_verdict(
        group=groups["g1@1"],
        grader="test@1",
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(1, "T2", 2), GradeInput(2, "T3", 3)],
    )
    record_verdict(
        group=groups["g2@1"],
        grader="test@1",
        status="valid",
        grades=[GradeInput(0, "T2", 1), GradeInput(2, "T2", 2), GradeInput(3, "T3", 3)],
    )
    record_verdict(group=groups["g4@1"], grader="test@1", status="invalid", errors=["rank 4 of 2"])
    record_verdict(group=groups["g7@2"], grader="test@1", status="valid", grades=[GradeInput(1, "T1", 1), GradeInput(2, "T3", 2)])

    before, label = export(client, trainer_token)
    assert label == "default@1" and len(before) == 6 + 5 + 2 + 3 + 2 + 3 + 4
    assert before[before.uid == "g1@1"].redistributed_advantage.round(6).tolist() == [
        0.638298,
        0.542553,
        0.319149,
        -0.5,
        -0.5,
        -0.5,
    ]
    assert_method_invariants(before)

    created = post(
        client, "/api/v1/mappings/", {"name": "steep", "bands": STEEP, "note": "T2 and T3 count for less"}, **token(alice_token)
    )
    assert created.status_code == 201, created.content
    steep = created.json()
    r = post(
        client,
        f"/api/v1/mappings/{steep['id']}/activate/",
        {"run": "r1", "reason": "calibration says T3 is worth little"},
        **token(alice_token),
    )
    assert r.status_code == 201, r.content
    # eager Celery recomputed both steps under the new mapping after the commit
    assert set(StepComputation.objects.filter(mapping_id=steep["id"]).values_list("step__number", "stale")) == {
        (1, False),
        (2, False),
    }

    after, label = export(client, trainer_token)
    assert label == "steep@1" and set(after["mapping"]) == {"steep@1"}
    assert_method_invariants(after)
    keys = ["step", "uid", "index"]
    assert after[keys].values.tolist() == before[keys].values.tolist()
    for column in ("reward", "passed", "advantage", "status"):  # the baseline does not depend on the mapping
        assert after[column].tolist() == before[column].tolist(), column

    graded = before.status.eq("graded") & before.passed
    changed = (after.redistributed_advantage - before.redistributed_advantage).abs() > 1e-9
    assert set(after[graded & changed].uid) == {"g1@1", "g2@1", "g7@2"}  # every graded group moved ...
    assert not changed[~graded].any()  # ... and nothing else did
    ungraded = ~before.status.eq("graded")
    same = [c for c in COLUMNS if c != "mapping"]
    pd.testing.assert_frame_equal(after.loc[ungraded, same], before.loc[ungraded, same])
    g1 = after[after.uid == "g1@1"]
    assert g1.factor.tolist() == [1.0, 0.6, 0.2, 1.0, 1.0, 1.0]
    # λ = 1.5 / (0.5 · (1 + 0.6 + 0.2)) = 5/3
    np.testing.assert_allclose(g1.redistributed_advantage, [5 / 6, 0.5, 1 / 6, -0.5, -0.5, -0.5], atol=1e-12)
    assert after[after.uid == "g2@1"].factor.tolist() == [0.6, 1.0, 0.4, 0.2, 1.0]

    # the old export is reproducible by label or id, though steep@1 is now active
    for old in ("default@1", str(default.pk)):
        again, label = export(client, trainer_token, mapping=old)
        assert label == "default@1"
        pd.testing.assert_frame_equal(again, before)

    history = client.get("/api/v1/mappings/active/?run=r1", **token(trainer_token)).json()
    assert history["mapping"]["label"] == "steep@1"
    assert [(h["activated_by"], h["reason"]) for h in history["history"]] == [("alice", "calibration says T3 is worth little")]
    listed = {m["label"]: m["active_runs"] for m in client.get("/api/v1/mappings/", **token(trainer_token)).json()}
    assert listed == {"default@1": [], "steep@1": ["r1"]}


def test_a_key_sent_twice_is_refused_not_last_wins(client, alice):
    client.force_login(alice)
    body = '{"name": "twice", "bands": {"T1": [1, 1], "T2": [0.8, 0.8], "T3": [0.5, 0.5]}, "name": "other"}'
    r = client.post("/api/v1/mappings/?project=acme", data=body, content_type="application/json")
    assert r.status_code == 400 and "duplicate key 'name'" in r.json()["detail"]
    r = client.post("/api/v1/mappings/?project=acme", data='{"name": "nan", "bands": NaN}', content_type="application/json")
    assert r.status_code == 400
    assert not FactorMapping.objects.filter(name__in=["twice", "other", "nan"]).exists()
