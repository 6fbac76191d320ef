"""`gagar-grader-bench/1`: judged groups with every grader's verdict and every person's
judgment, one dataset to compare graders outside the desk. Pure: stdlib and pyarrow.

One JSON line per judged group (see docs/formats.md):

    {"format": "gagar-grader-bench/1", "run", "step", "uid", "instance_id", "repo",
     "rollouts": [{"index", "reward", "passed"}],
     "verdicts": [{"grader", "status", "usage", "jury", "grades": [{"index", "tier", "rank", "cheat", "uncited"}]}],
     "judgments": [{"rater", "kind", "items": [{"index", "tier", "rank", "cheat"}]}],
     "audits": [{"index", "confirmed"}]}

Parquet is the same data long: one row per (group, rollout, rater) that tiered it, with the
group's run, step, uid, the rollout's reward and audit, and who the rater is (`source`
"grader", "review" or "adjudication"); `uncited` says a grader's judgment spoke against the
rollout without a citation (grading.grader.evidence.is_uncited), null for people's.

>>> line = {"format": FORMAT, "run": "r1", "step": 1, "uid": "t@1", "instance_id": "t", "repo": "o/r",
...         "rollouts": [{"index": 0, "reward": 1.0, "passed": True}],
...         "verdicts": [{"grader": "heuristic@1", "status": "valid", "usage": {}, "jury": None,
...                       "grades": [{"index": 0, "tier": "T1", "rank": 1, "cheat": False}]}],
...         "judgments": [{"rater": "bob", "kind": "review",
...                        "items": [{"index": 0, "tier": "T2", "rank": 1, "cheat": False}]}],
...         "audits": []}
>>> [(r["rater"], r["source"], r["tier"]) for r in long_rows([line])]
[('heuristic@1', 'grader', 'T1'), ('bob', 'review', 'T2')]
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

FORMAT = "gagar-grader-bench/1"
_FIELDS: list[pa.Field[Any]] = [
    pa.field("format", pa.string()),
    pa.field("run", pa.string()),
    pa.field("step", pa.int64()),
    pa.field("uid", pa.string()),
    pa.field("rollout", pa.int64()),
    pa.field("reward", pa.float64()),
    pa.field("audit", pa.bool_()),
    pa.field("rater", pa.string()),
    pa.field("source", pa.string()),
    pa.field("status", pa.string()),
    pa.field("tier", pa.string()),
    pa.field("rank", pa.int64()),
    pa.field("cheat", pa.bool_()),
    pa.field("uncited", pa.bool_()),
]
SCHEMA = pa.schema(_FIELDS)


def long_rows(lines: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every (group, rollout, rater) tier of the lines, flat, in line order."""
    for line in lines:
        rewards = {r["index"]: r["reward"] for r in line["rollouts"]}
        audits = {a["index"]: a["confirmed"] for a in line["audits"]}
        base = {"format": FORMAT, "run": line["run"], "step": line["step"], "uid": line["uid"]}
        raters = [(v["grader"], "grader", v["status"], v["grades"]) for v in line["verdicts"]]
        raters += [(j["rater"], j["kind"], None, j["items"]) for j in line["judgments"]]
        for rater, source, status, items in raters:
            grader = source == "grader"
            for item in items:
                yield {
                    **base,
                    "rollout": item["index"],
                    "reward": rewards.get(item["index"]),
                    "audit": audits.get(item["index"]),
                    "rater": rater,
                    "source": source,
                    "status": status,
                    "tier": item["tier"],
                    "rank": item["rank"],
                    "cheat": item["cheat"],
                    "uncited": bool(item.get("uncited")) if grader else None,
                }


def parquet_bytes(lines: Iterable[dict[str, Any]], *, batch_rows: int = 50_000) -> bytes:
    """The lines' long rows as one Parquet file, written a record batch at a time."""
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, SCHEMA) as writer:
        batch: list[dict[str, Any]] = []
        for row in long_rows(lines):
            batch.append(row)
            if len(batch) >= batch_rows:
                writer.write_table(pa.Table.from_pylist(batch, schema=SCHEMA))
                batch = []
        writer.write_table(pa.Table.from_pylist(batch, schema=SCHEMA))
    return sink.getvalue()
