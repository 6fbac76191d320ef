"""The search index (grading.search): one RolloutSearch row per rollout, filled for the
rollouts already stored; on PostgreSQL a tsvector column with a GIN index (words, phrases,
prefixes, and the literal mode's pre-filter). Also the cheat-signal source `search` (an
auditor's query turned into signals)."""

import django.db.models.deletion
from django.db import migrations, models

from grading.search.index import POSTGRES_REVERSE_SQL, POSTGRES_SQL, backfill


def fill_index(apps, schema_editor):
    backfill(apps, using=schema_editor.connection)


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
                ("rollout", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                                                 related_name="search", serialize=False, to="grading.rollout")),
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
            field=models.CharField(choices=[("grader", "Grader flag"), ("prescreen", "Deterministic prescreen"),
                                            ("reviewer", "Reviewer"), ("search", "Search (an auditor's query)")], max_length=10),
        ),
        migrations.RunPython(postgres_index, drop_postgres_index),
        migrations.RunPython(fill_index, migrations.RunPython.noop),
    ]
