"""gagar-group/1 lines: `small_group(uid, ...)` builds one group; `line(group)` is its bytes,
`jsonl(*groups)` a request body (a group given as bytes is a raw line)."""

from __future__ import annotations

import gzip

import orjson


def line(obj) -> bytes:
    return orjson.dumps(obj)


def jsonl(*objs, gz: bool = False) -> bytes:
    """A JSON-lines body: each object on its own line; a line given as bytes goes as it is."""
    body = b"".join((o if isinstance(o, bytes) else orjson.dumps(o)) + b"\n" for o in objs)
    return gzip.compress(body) if gz else body


def small_group(
    uid: str = "t-1@1", *, run: str = "r1", step: int = 1, rewards=(1, 0, 1), instance_id: str = "t-1", **task
) -> dict:
    return {
        "format": "gagar-group/1",
        "run": run,
        "step": step,
        "uid": uid,
        "task": {"instance_id": instance_id, "repo": "octo/widgets", "problem_statement": "Fix the widget.", **task},
        "rollouts": [
            {
                "index": i,
                "reward": r,
                "patch": f"diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = {i}\n+y = {i + 1}\n",
                "messages": [
                    {"role": "user", "content": "Fix the widget."},
                    {
                        "role": "assistant",
                        "content": "THOUGHT: look\n\n```bash\ncat w.py\n```",
                        "action": "cat w.py",
                        "observation": "x = 1",
                    },
                ],
                "tests": {"FAIL_TO_PASS": {"success": ["t::a"] if r else [], "failure": [] if r else ["t::a"]}},
                "test_log": "t::a PASSED" if r else "t::a FAILED",
                "exit_status": "Submitted",
                "stats": {"tokens": 1000 + i, "turns": 1, "cost_usd": 0.01},
                "source": {"format": "test", "ref": f"fixture/{uid}/{i}"},
            }
            for i, r in enumerate(rewards)
        ],
    }
