"""Patches highlighted ahead of the reviewer: after ingest, a Celery task highlights each new
rollout's patch (grading.rollouts.diffs.highlight_patch, in the bounded highlighter workers)
and stores it (PatchHighlight), so a group's first view reads it instead of lexing."""
