"""Stored advantages and the trainer export (gagar-advantage/1) in JSONL, CSV and Parquet."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from django.core.management import call_command

from grading.method.export import COLUMNS
from grading.method.services.activation import activate_mapping
from grading.models import AdvantageResult, CheatDecision, FactorMapping, Group, Run, StepComputation
from grading.verdicts.store import GradeInput, decide_cheat, record_verdict
from tests.helpers.groups import jsonl, small_group
from tests.helpers.ingest import ingest_groups, post_groups, post_lines
from tests.helpers.real_groups import load_real_groups

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/advantages/"


def export(client, token, fmt, **params) -> pd.DataFrame:
    query = "&".join(f"{k}={v}" for k, v in {"run": "r1", "format": fmt, **params}.items())
    r = client.get(f"{URL}?{query}", HTTP_AUTHORIZATION=f"Token {token}")
    assert r.status_code == 200, getattr(r, "content", b"")[:300]
    body = b"".join(r.streaming_content) if r.streaming else r.content
    if fmt == "jsonl":
        return pd.DataFrame([json.loads(line) for line in body.splitlines()], columns=COLUMNS)
    if fmt == "csv":
        return pd.read_csv(
            io.BytesIO(body),
            dtype={"tier": "string", "cheat_source": "string", "dropped": "string", "drop_mode": "string"},
            keep_default_na=True,
        )
    return pd.read_parquet(io.BytesIO(body))


@pytest.fixture
def graded_step(client, alice_token):
    # g1: the docs/method.md worked example; g2: a fallback group; g3: all pass (filtered)
    post_groups(
        client,
        alice_token,
        small_group("g1@1", rewards=(1, 1, 1, 0, 0, 0)),
        small_group("g2@1", instance_id="t-2", rewards=(1, 0)),
        small_group("g3@1", instance_id="t-3", rewards=(1, 1)),
    )
    record_verdict(
        group=Group.objects.get(uid="g1@1"),
        grader="test@1",
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(1, "T2", 2), GradeInput(2, "T3", 3)],
    )
    return Run.objects.get(name="r1")


def test_worked_example_stored_and_exported(client, trainer_token, graded_step):
    frame = export(client, trainer_token, "jsonl", step=1)
    assert list(frame.columns) == COLUMNS
    g1 = frame[frame.uid == "g1@1"]
    assert g1["index"].tolist() == [0, 1, 2, 3, 4, 5]
    assert g1["redistributed_advantage"].round(6).tolist() == [0.638298, 0.542553, 0.319149, -0.5, -0.5, -0.5]
    assert g1["discount_only_advantage"].tolist() == [0.5, 0.425, 0.25, -0.5, -0.5, -0.5]
    assert g1["tier"].tolist()[:3] == ["T1", "T2", "T3"] and g1["status"].unique().tolist() == ["graded"]
    assert frame[frame.uid == "g2@1"]["status"].unique().tolist() == ["fallback"]
    assert frame[frame.uid == "g3@1"]["advantage"].tolist() == [0.0, 0.0]
    assert set(frame["mapping"]) == {"default@1"} and set(frame["baseline"]) == {"mean"}
    assert AdvantageResult.objects.count() == 10


def test_formats_round_trip_and_groups_sum_to_zero(client, trainer_token, alice_token, graded_step):
    real = load_real_groups()
    for g in real:
        g["run"], g["step"] = "r1", 2
    post_groups(client, alice_token, *real)
    call_command(
        "seed_demo",
        "--project",
        "acme",
        "--username",
        "alice",
        "--steps",
        "1",
        "--groups-per-step",
        "6",
        "--no-simulate",
        verbosity=0,
        stdout=io.StringIO(),
    )
    frames = {fmt: export(client, trainer_token, fmt) for fmt in ("jsonl", "csv", "parquet")}
    base = frames["jsonl"]
    assert len(base) == 10 + 16 and set(base["step"]) == {1, 2}
    for fmt in ("csv", "parquet"):
        other = frames[fmt]
        for column in COLUMNS:
            left, right = base[column], other[column]
            if column in ("tier", "cheat_source", "rank", "reward", "dropped", "drop_mode"):
                left, right = left.astype("object").where(left.notna(), None), right.astype("object").where(right.notna(), None)
                assert [None if v is None else (float(v) if column in ("rank", "reward") else v) for v in left] == [
                    None if v is None else (float(v) if column in ("rank", "reward") else v) for v in right
                ], (fmt, column)
            else:
                assert left.tolist() == right.tolist(), (fmt, column)
    sums = base.groupby("uid")[["advantage", "redistributed_advantage"]].sum()
    assert (sums["redistributed_advantage"] - sums["advantage"]).abs().max() < 1e-9
    assert sums["advantage"].abs().max() < 1e-9  # mean baseline: every group sums to 0


def test_confirmed_cheat_zeroes_reward_and_recomputes(client, trainer_token, graded_step):
    export(client, trainer_token, "jsonl", step=1)
    decision = CheatDecision.objects.create(rollout=Group.objects.get(uid="g1@1").rollouts.get(index=2), source="prescreen")
    decide_cheat(decision=decision, confirmed=True, reason="read the upstream fix with git log")
    # eager Celery ran the recomputation after the commit
    assert StepComputation.objects.get(step__number=1).stale is False
    row = AdvantageResult.objects.get(uid="g1@1", index=2)
    assert (row.reward, row.passed, row.cheat, row.cheat_source, row.tier) == (0.0, False, True, "prescreen", "")
    frame = export(client, trainer_token, "jsonl", step=1)
    g1 = frame[frame.uid == "g1@1"]
    assert g1["reward"].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert abs(g1["redistributed_advantage"].sum()) < 1e-12


def test_activating_a_mapping_recomputes_and_exports_it(client, trainer_token, graded_step):
    flat = FactorMapping.objects.create(name="flat", version=1, bands={"T1": [1, 1], "T2": [1, 1], "T3": [1, 1]})
    activate_mapping(run=graded_step, mapping=flat, reason="turn redistribution off")
    frame = export(client, trainer_token, "jsonl", step=1)
    g1 = frame[frame.uid == "g1@1"]
    assert set(g1["mapping"]) == {"flat@1"}
    assert g1["redistributed_advantage"].tolist() == g1["advantage"].tolist()  # all f equal -> A* = A
    old = export(client, trainer_token, "jsonl", step=1, mapping="default@1")
    assert old[old.uid == "g1@1"]["redistributed_advantage"].round(6).tolist()[0] == 0.638298


def test_trainer_token_can_export_but_not_write(client, trainer_token, graded_step):
    auth = {"HTTP_AUTHORIZATION": f"Token {trainer_token}"}
    assert client.get(f"{URL}?run=r1&format=csv", **auth).status_code == 200
    assert post_lines(client, trainer_token, jsonl(small_group("x@1"))).status_code == 403
    assert client.post(f"{URL}?run=r1", **auth).status_code == 405
    assert client.get("/api/v1/groups/?project=acme", **auth).status_code == 403
    assert not Group.objects.filter(uid="x@1").exists()


def test_reviewer_cannot_export_and_bad_parameters_are_4xx(client, bob, graded_step, trainer_token):
    client.force_login(bob)  # a reviewer: pages yes, trainer export no
    assert client.get(f"{URL}?project=acme&run=r1").status_code == 403
    auth = {"HTTP_AUTHORIZATION": f"Token {trainer_token}"}
    assert client.get(f"{URL}?run=r1&format=xml", **auth).status_code == 400
    assert client.get(f"{URL}?run=nope", **auth).status_code == 404
    assert client.get(f"{URL}?run=r1&step=9", **auth).status_code == 404
    assert client.get(f"{URL}?run=r1&mapping=nope@3", **auth).status_code == 404
    assert client.get(f"{URL}", **auth).status_code == 400


def test_export_query_count_does_not_grow_with_rows(client, trainer_token, graded_step, django_assert_max_num_queries):
    export(client, trainer_token, "jsonl", step=1)  # computed once, and its bytes kept for the inputs version
    # auth (3), project and run (2), the step's grading status (4), mapping, computation, the kept bytes
    with django_assert_max_num_queries(14):
        export(client, trainer_token, "jsonl", step=1)


def test_parquet_snapshot_equals_rows_and_keeps_nulls(client, trainer_token, alice_token, acme, graded_step):
    """The Parquet stored with a computation and one rebuilt from the rows are the same table,
    including NULL rewards (unknown verdicts), NULL tiers/ranks and cheat sources."""
    unknown = small_group("u@1", instance_id="t-9", rewards=(1, 0))
    unknown["rollouts"][1]["reward"] = None
    report = ingest_groups(acme, unknown, allow_unknown_reward=True)
    assert report.groups_created == 1
    decision = CheatDecision.objects.create(rollout=Group.objects.get(uid="g1@1").rollouts.get(index=1), source="grader")
    decide_cheat(decision=decision, confirmed=True)
    snapshot = export(client, trainer_token, "parquet", step=1)
    assert StepComputation.objects.filter(step__number=1, parquet__isnull=False).exists()
    StepComputation.objects.update(parquet=None)  # force the path that reads the rows
    rebuilt = export(client, trainer_token, "parquet", step=1)
    pd.testing.assert_frame_equal(snapshot, rebuilt)
    u = snapshot[snapshot.uid == "u@1"]
    assert u["reward"].isna().tolist() == [False, True] and set(u["status"]) == {"filtered"}
    g1 = snapshot[snapshot.uid == "g1@1"].set_index("index")
    assert g1.loc[1, "cheat_source"] == "grader" and g1.loc[1, "cheat"] and pd.isna(g1.loc[1, "tier"])
    assert pd.isna(g1.loc[3, "rank"]) and g1.loc[0, "rank"] == 1
    jsonl = export(client, trainer_token, "jsonl", step=1)
    assert jsonl["redistributed_advantage"].tolist() == snapshot["redistributed_advantage"].tolist()


def test_parquet_rebuilt_one_row_per_block_equals_snapshot(client, trainer_token, graded_step, monkeypatch):
    """On PostgreSQL every COPY block ends at a row's end, so parsing each block alone (here one
    row per block, and a row group every 3 rows) gives the same table as the stored snapshot."""
    from grading.method import export as export_module

    snapshot = export(client, trainer_token, "parquet", step=1)
    StepComputation.objects.update(parquet=None)
    monkeypatch.setattr(export_module, "COPY_BLOCK", 1)
    monkeypatch.setattr(export_module, "PARSE_BLOCK", 1)
    monkeypatch.setattr(export_module, "ROW_GROUP_ROWS", 3)
    rebuilt = export(client, trainer_token, "parquet", step=1)
    pd.testing.assert_frame_equal(snapshot, rebuilt)
    assert len(rebuilt) == 10


def test_parquet_export_hands_arrow_only_memory_it_owns(client, trainer_token, graded_step, monkeypatch):
    """Arrow may free what it read on one of its own threads after the call returned; a buffer
    wrapping a Python object then needs the GIL, and at interpreter shutdown that aborted
    `export_advantages --format parquet` with status 134 (about 1 run in 80). Both routes — the
    stored snapshot and the rebuild from the rows — must read from Arrow-owned buffers."""
    import pyarrow as pa

    real_reader = pa.BufferReader
    seen = []

    def reader(source):
        seen.append(source)
        return real_reader(source)

    from grading.method import export as export_module

    export(client, trainer_token, "parquet", step=1)  # computes the step and stores its snapshot
    step, mapping = graded_step.steps.get(number=1), FactorMapping.objects.get(name="default", version=1)
    assert StepComputation.objects.filter(step=step, mapping=mapping, parquet__isnull=False).exists()
    monkeypatch.setattr(pa, "BufferReader", reader)
    for use_snapshots in (True, False):  # False: from the rows (COPY CSV on PostgreSQL, the ORM elsewhere)
        with export_module.parquet_file([step], mapping, use_snapshots=use_snapshots) as spool:
            assert pd.read_parquet(spool).shape[0] == 10
    assert seen, "the export read nothing through a BufferReader"
    assert all(isinstance(s, pa.Buffer) and s.parent is None for s in seen), [type(s) for s in seen]


def test_many_steps_gathered_into_row_groups_in_step_order(client, trainer_token, alice_token, graded_step, monkeypatch):
    """A run's export gathers step snapshots into row groups of ROW_GROUP_ROWS; a step without a
    current snapshot is read from its rows in its place. The file is the rows' export, in step order."""
    import pyarrow.parquet as pq

    from grading.method import export as export_module

    post_groups(
        client, alice_token, *(small_group(f"g{s}@{s}", step=s, instance_id=f"t-{s}", rewards=(1, 0, 1)) for s in (2, 3, 4))
    )
    steps = list(graded_step.steps.order_by("number"))
    mapping = FactorMapping.objects.get(name="default", version=1)
    for step in steps:
        export(client, trainer_token, "parquet", step=step.number)  # computes each step and stores its snapshot
    StepComputation.objects.filter(step__number=3).update(parquet=None)  # step 3 comes from its rows
    monkeypatch.setattr(export_module, "ROW_GROUP_ROWS", 12)  # steps hold 10, 3, 3 and 3 rows
    with export_module.parquet_file(steps, mapping) as spool:
        gathered = pq.ParquetFile(spool)
        sizes = [gathered.metadata.row_group(i).num_rows for i in range(gathered.metadata.num_row_groups)]
        from_snapshots = gathered.read().to_pandas()
    with export_module.parquet_file(steps, mapping, use_snapshots=False) as spool:
        from_rows = pd.read_parquet(spool)
    pd.testing.assert_frame_equal(from_snapshots, from_rows)
    assert from_snapshots["step"].tolist() == sorted(from_snapshots["step"]) and set(from_snapshots["step"]) == {1, 2, 3, 4}
    assert sizes == [12, 1, 3, 3]  # steps 1-2 gathered (13 rows, cut at 12); step 3 written alone; step 4 at the end
