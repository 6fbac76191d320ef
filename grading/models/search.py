"""The search index: one row per rollout with the text it is searched by (grading.search)."""

from __future__ import annotations

from django.db import models


class RolloutSearch(models.Model):
    """A rollout's bounded search text (grading.search.text.search_text) and the few fields
    a search is scoped by, so a search reads one table and joins only for the page's rows.

    Written by ingest in the transaction that stores the rollout (grading.ingest.service).
    On PostgreSQL migration 0015 adds what Django does not model: a `vector` column (a
    tsvector of the text's runs of letters and digits, lower-cased, no stemming: it is
    code), written with the row (grading.search.index), with a GIN index for words,
    phrases, prefixes and the literal mode's pre-filter. SQLite has neither; search there
    reads the rows (slower).
    """

    rollout = models.OneToOneField("grading.Rollout", on_delete=models.CASCADE, primary_key=True, related_name="search")
    run = models.ForeignKey("grading.Run", on_delete=models.CASCADE, related_name="+")
    step_number = models.PositiveIntegerField()
    passed = models.BooleanField(null=True)
    text = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["run", "step_number"], name="rolloutsearch_run_step")]

    def __str__(self) -> str:
        return f"search text of rollout {self.rollout_id}"
