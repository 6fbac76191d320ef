"""verl rollout dumps (grading/ingest/importers/verl.py) -> attempts, no database.

The dumps are written by `dump_generations` (tests/helpers/import_files.py), which lays rows
out exactly as verl's `RayPPOTrainer._dump_generations` (verl/trainer/ppo/ray_trainer.py)
does: a dict of equal-length lists (`input`, `output`, `gts`, `score`, `step` and each reward
extra of length n), one `json.dumps(..., ensure_ascii=False)` object per sample, joined by
newlines, to `<step>.jsonl`.
"""

from __future__ import annotations

import json

from grading.ingest.importers import verl
from grading.ingest.importers.scan import NOTICE, SKIPPED
from tests.helpers.import_files import PROMPTS, dump_generations, find, reasons


def test_verl_dump_groups_rows_by_prompt_with_rewards_from_score(tmp_path):
    dump = tmp_path / "rollout_data"
    dump_generations(
        dump,
        12,
        [PROMPTS[0]] * 3 + [PROMPTS[1]] * 3,
        ["4", "5", "4", "cba", "cba", "abc"],
        [1.0, 0.0, 1.0, 1.0, 1.0, 0.0],
        {"acc": [True, False, True, True, True, False], "too_short": [1]},
        gts=["4", "4", "4", "cba", "cba", "cba"],
    )
    finder, found = find(dump)
    assert len(found) == 2
    groups = {finder.group_of(key): items for key, items in found.items()}
    ids = {verl.prompt_id(p): p for p in PROMPTS}
    for (instance_id, step, stem), items in groups.items():
        assert step == 12 and stem == instance_id and instance_id in ids
        assert [item.attempt.problem_statement for item in items] == [ids[instance_id]] * 3
    first = groups[(verl.prompt_id(PROMPTS[0]), 12, verl.prompt_id(PROMPTS[0]))]
    assert [i.rollout["reward"] for i in first] == [1.0, 0.0, 1.0]
    assert [i.rollout["source"]["ref"] for i in first] == [f"rollout_data/12.jsonl#line-{n}" for n in (1, 2, 3)]
    rollout = first[1].rollout
    assert rollout["messages"] == [{"role": "user", "content": PROMPTS[0]}, {"role": "assistant", "content": "5"}]
    assert rollout["patch"] == "" and rollout["stats"] == {"turns": 1} and rollout["source"]["format"] == "verl"
    assert rollout["metadata"] == {
        "score": 0.0,
        "text_only": True,
        "reward_extra": {"acc": False},
        "ground_truth": "4",
        "verdict": {"status": "unresolved", "source": "score", "ref": "rollout_data/12.jsonl#line-2", "rule": "score 0"},
    }
    assert reasons(finder, NOTICE) == {
        "rollout_data/12.jsonl": "verl dump: 6 rows in 2 group(s) at step 12 (the dump's own step)"
    }


def test_verl_rows_sharing_a_uid_are_one_group_even_when_prompts_repeat(tmp_path):
    dump = tmp_path / "d"
    uids = ["9f0c-a", "9f0c-a", "77b1-b", "77b1-b"]
    dump_generations(dump, 3, [PROMPTS[0]] * 4, ["4", "4", "5", "4"], [1, 1, 0, 1], {"uid": uids})
    finder, found = find(dump)
    groups = {finder.group_of(key)[2]: items for key, items in found.items()}
    assert sorted(groups) == ["77b1-b", "9f0c-a"]  # the same prompt twice in the batch: two groups, as GRPO had them
    assert [i.rollout["reward"] for i in groups["77b1-b"]] == [0.0, 1.0]
    assert groups["9f0c-a"][0].rollout["metadata"]["verl_uid"] == "9f0c-a"
    assert {finder.group_of(key)[0] for key in found} == {verl.prompt_id(PROMPTS[0])}  # one task


def test_verl_score_that_is_not_binary_refuses_the_file_naming_the_line_unless_a_threshold(tmp_path):
    dump = tmp_path / "d"
    dump_generations(dump, 1, PROMPTS, ["4", "cba"], [1.0, 0.0], {})
    dump_generations(dump, 2, [PROMPTS[0]] * 3, ["4", "5", "4"], [1.0, 0.25, 0.75], {})
    finder, found = find(dump)
    assert {finder.group_of(k)[1] for k in found} == {1}  # step 2's file refused whole
    assert reasons(finder, SKIPPED)["d/2.jsonl"].startswith("line 2: score 0.25 is not 0 or 1; give a reward threshold")
    finder, found = find(dump, threshold=0.5)
    step2 = next(items for key, items in found.items() if finder.group_of(key)[1] == 2)
    assert [i.rollout["reward"] for i in step2] == [1.0, 0.0, 1.0]
    assert [i.rollout["metadata"]["verdict"]["rule"] for i in step2] == [
        "score 1",
        "score 0.25 < threshold 0.5",
        "score 0.75 >= threshold 0.5",
    ]


def test_verl_broken_rows_refuse_their_file(tmp_path):
    dump = tmp_path / "d"
    dump.mkdir()
    (dump / "4.jsonl").write_text(json.dumps({"input": "p", "output": "o", "score": 1, "step": 4}) + '\n{"input": "p", "outp\n')
    (dump / "5.jsonl").write_text(json.dumps({"input": "p", "output": "o", "score": "high", "step": 5}) + "\n")
    (dump / "6.jsonl").write_text(json.dumps({"input": "p", "output": "o", "score": 1}) + "\n")  # no step: the file's name
    finder, found = find(dump, fmt="verl", step=9)
    skipped = reasons(finder, SKIPPED)
    assert skipped["d/4.jsonl"].startswith("line 2: truncated or invalid JSON")
    assert skipped["d/5.jsonl"] == "line 1: score must be a number, got 'high'"
    assert [finder.group_of(k)[1] for k in found] == [6]
