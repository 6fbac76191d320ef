"""gagar-grader-bench/1 rows and Parquet, without a database."""

from __future__ import annotations

import io

import pyarrow.parquet as pq

from reviews.formats.grader_bench import FORMAT, SCHEMA, long_rows, parquet_bytes

LINE = {
    "format": FORMAT,
    "run": "r1",
    "step": 2,
    "uid": "t@2",
    "instance_id": "t",
    "repo": "o/r",
    "rollouts": [{"index": 0, "reward": 1.0, "passed": True}, {"index": 1, "reward": 0.0, "passed": False}],
    "verdicts": [
        {
            "grader": "jury:j@1",
            "status": "valid",
            "usage": {},
            "jury": {"members": ["a@1"]},
            "grades": [{"index": 0, "tier": "T1", "rank": 1, "cheat": False}],
        }
    ],
    "judgments": [{"rater": "fay", "kind": "adjudication", "items": [{"index": 0, "tier": "T3", "rank": 1, "cheat": True}]}],
    "audits": [{"index": 0, "confirmed": True}],
}


def test_rows_carry_reward_audit_and_who_rated():
    rows = list(long_rows([LINE]))
    assert [(r["rater"], r["source"], r["status"], r["tier"], r["reward"], r["audit"]) for r in rows] == [
        ("jury:j@1", "grader", "valid", "T1", 1.0, True),
        ("fay", "adjudication", None, "T3", 1.0, True),
    ]


def test_parquet_round_trips_in_small_batches_and_empty():
    table = pq.read_table(io.BytesIO(parquet_bytes([LINE, {**LINE, "uid": "u@2"}], batch_rows=1)))
    assert table.schema.equals(SCHEMA) and table.num_rows == 4
    assert table.column("uid").to_pylist() == ["t@2", "t@2", "u@2", "u@2"]
    empty = pq.read_table(io.BytesIO(parquet_bytes([])))
    assert empty.num_rows == 0 and empty.schema.equals(SCHEMA)
