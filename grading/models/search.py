"""The search index (grading.search): per rollout its scope fields, its fields in chunks, and
the rollouts stored but not indexed yet."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class RolloutSearch(models.Model):
    """An indexed rollout and the few fields a search is scoped by, so a search reads this
    table and joins only for the page's rows. The row exists once the rollout's chunks do.

    On PostgreSQL migration 0016 adds what Django does not model: `vector`, the tsvector of
    every token of the rollout (grading.search.text.lexemes: lower-case runs of letters and
    digits, no positions, no stemming: it is code), with a GIN index, for words and prefixes.
    """

    rollout = models.OneToOneField("grading.Rollout", on_delete=models.CASCADE, primary_key=True, related_name="search")
    run = models.ForeignKey("grading.Run", on_delete=models.CASCADE, related_name="+")
    step_number = models.PositiveIntegerField()
    passed = models.BooleanField(null=True)

    class Meta:
        indexes = [models.Index(fields=["run", "step_number"], name="rolloutsearch_run_step")]

    def __str__(self) -> str:
        return f"search row of rollout {self.rollout_id}"


class SearchChunk(models.Model):
    """Up to 8,000 characters of a rollout's fields (grading.search.text.chunks), in order.
    Literal substrings and phrases are found here: by a pg_trgm GIN index on PostgreSQL, by an
    FTS5 trigram table kept in step by triggers on SQLite (both migration 0016)."""

    id = models.BigAutoField(primary_key=True)
    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="+", db_index=False)
    seq = models.PositiveIntegerField()
    text = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rollout", "seq"], name="searchchunk_rollout_seq")]

    def __str__(self) -> str:
        return f"chunk {self.seq} of rollout {self.rollout_id}"


class SearchBacklog(models.Model):
    """A rollout stored but not yet indexed (the deployment indexes after the ingest
    transaction, in a task: grading.search.index). A search says how many of its scope wait."""

    rollout = models.OneToOneField("grading.Rollout", on_delete=models.CASCADE, primary_key=True, related_name="+")
    run = models.ForeignKey("grading.Run", on_delete=models.CASCADE, related_name="+")
    queued_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"rollout {self.rollout_id} waiting for the search index"
