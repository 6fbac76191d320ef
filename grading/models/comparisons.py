"""Blind quality evaluations between two runs or checkpoints (grading.comparisons).

A comparison picks the tasks both sides solved, samples up to `per_side` passing rollouts of
each side per task and stores them, shuffled, as one cross-run group per task in a run of its
own (`Comparison.run`, its groups marked Group.in_comparison so they are judged). Which side a
stored rollout came from is kept here alone (ComparisonEntry), never on the rollout: the pages
of a blind judge read the rollout, and so cannot name its run.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from grading.models.projects import Project
from grading.models.runs import Rollout, Run


class Comparison(models.Model):
    """One blind evaluation: side A (a run over a step range) against side B."""

    class Side(models.TextChoices):
        A = "a", "A"
        B = "b", "B"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="comparisons")
    name = models.CharField(max_length=100)
    # The run that holds the cross-run groups, named like the comparison; deleting it deletes this.
    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="comparison")
    # The two sides: a run and a range of its steps (one step: a checkpoint). A side's run may be
    # deleted later; its label keeps what it was ("run@steps").
    run_a = models.ForeignKey(Run, null=True, on_delete=models.SET_NULL, related_name="+")
    steps_a = models.JSONField(help_text="[first, last] step of side A")
    label_a = models.CharField(max_length=300)
    run_b = models.ForeignKey(Run, null=True, on_delete=models.SET_NULL, related_name="+")
    steps_b = models.JSONField(help_text="[first, last] step of side B")
    label_b = models.CharField(max_length=300)
    per_side = models.PositiveSmallIntegerField(help_text="passing rollouts of each side per task, at most")
    max_tasks = models.PositiveIntegerField(help_text="tasks sampled, at most, from those both sides solved")
    seed = models.BigIntegerField()
    n_solved_both = models.PositiveIntegerField(help_text="tasks both sides solved: the population sampled from")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="comparison_name_unique_in_project")]

    def __str__(self) -> str:
        return f"{self.project}/{self.name}"

    def label(self, side: str) -> str:
        return self.label_a if side == self.Side.A else self.label_b


class ComparisonEntry(models.Model):
    """A rollout of a comparison's group and the side and rollout it was copied from."""

    comparison = models.ForeignKey(Comparison, on_delete=models.CASCADE, related_name="entries")
    rollout = models.OneToOneField(Rollout, on_delete=models.CASCADE, related_name="comparison_entry")
    side = models.CharField(max_length=1, choices=Comparison.Side.choices)
    source = models.ForeignKey(Rollout, null=True, on_delete=models.SET_NULL, related_name="+")
    # The source as it was named when copied: "<run>@<step>/<group uid>#<index>".
    source_label = models.CharField(max_length=1200)

    class Meta:
        ordering = ["comparison", "rollout"]

    def __str__(self) -> str:
        return f"{self.comparison}: {self.side} {self.source_label}"
