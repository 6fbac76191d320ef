"""Stored verdicts: record one (and a rollout's cheat decisions), copy one onto identical patches,
combine a jury's, compare graders (stored disagreement), deliberate with a person, and take an
external grader's. Below it: grading.registry, grading.grader."""
