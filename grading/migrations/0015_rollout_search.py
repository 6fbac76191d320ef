"""The search index (grading.search): one RolloutSearch row per rollout, filled for the
rollouts already stored; on PostgreSQL a tsvector column with a GIN index (words, phrases,
prefixes, and the literal mode's pre-filter). Also the cheat-signal source `search` (an
auditor's query turned into signals)."""

import django.db.models.deletion
from django.db import migrations, models

# This migration's own statements (grading.search.index has moved on since): the vector
# column 0016 keeps, and its GIN index. 0015 filled the rows with a bounded text; 0016 drops
# that text and indexes every rollout again, so filling them here would be thrown away.
POSTGRES_SQL = [
    "ALTER TABLE grading_rolloutsearch ADD COLUMN vector tsvector NOT NULL DEFAULT ''",
    "CREATE INDEX rolloutsearch_vector ON grading_rolloutsearch USING gin (vector) WITH (gin_pending_list_limit = 16384)",
]
POSTGRES_REVERSE_SQL = [
    "DROP INDEX IF EXISTS rolloutsearch_vector",
    "ALTER TABLE grading_rolloutsearch DROP COLUMN IF EXISTS vector",
]


def postgres_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES_SQL:
            schema_editor.execute(statement)


def drop_postgres_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES_REVERSE_SQL:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("grading", "0014_rollout_clusters"),
    ]

    operations = [
        migrations.CreateModel(
            name="RolloutSearch",
            fields=[
                (
                    "rollout",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="search",
                        serialize=False,
                        to="grading.rollout",
                    ),
                ),
                ("step_number", models.PositiveIntegerField()),
                ("passed", models.BooleanField(null=True)),
                ("text", models.TextField(blank=True)),
                ("run", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="grading.run")),
            ],
            options={
                "indexes": [models.Index(fields=["run", "step_number"], name="rolloutsearch_run_step")],
            },
        ),
        migrations.AlterField(
            model_name="cheatdecision",
            name="source",
            field=models.CharField(
                choices=[
                    ("grader", "Grader flag"),
                    ("prescreen", "Deterministic prescreen"),
                    ("reviewer", "Reviewer"),
                    ("search", "Search (an auditor's query)"),
                ],
                max_length=10,
            ),
        ),
        migrations.RunPython(postgres_index, drop_postgres_index),
    ]
