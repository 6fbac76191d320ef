"""The judge panel's reads (reviews/selectors/judge_panel.py) that need no database."""


def test_grader_agrees_only_on_the_same_tier_and_the_same_cheat_call():
    from types import SimpleNamespace

    from reviews.selectors.judge_panel import grader_says

    grade = SimpleNamespace(tier="T2", cheat=True)
    assert grader_says({"tier": "T2", "cheat": True}, grade) == ""
    assert grader_says({"tier": "T2", "cheat": False}, grade) == "cheat"
    assert grader_says({"tier": "T1"}, grade) == "T2, cheat"
    assert grader_says({"tier": "T1", "cheat": True}, SimpleNamespace(tier="T1", cheat=False)) == "no cheat"
