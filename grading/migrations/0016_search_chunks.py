"""The whole rollout searchable: every field in SearchChunk rows (a pg_trgm index on
PostgreSQL, an FTS5 trigram table on SQLite), RolloutSearch without the 16,000-character text
it used to hold and with a tsvector of every token (no positions), and SearchBacklog for the
rollouts a worker has yet to index. Every stored rollout is indexed again (grading.search.index)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

from grading.search.index import POSTGRES_REVERSE_SQL, POSTGRES_SQL, SQLITE_REVERSE_SQL, SQLITE_SQL, backfill


def reindex(apps, schema_editor):
    connection = schema_editor.connection
    apps.get_model("grading", "RolloutSearch").objects.using(connection.alias).all().delete()
    if connection.vendor == "postgresql":
        for statement in POSTGRES_SQL:
            schema_editor.execute(statement)
    elif connection.vendor == "sqlite":
        for statement in SQLITE_SQL:
            schema_editor.execute(statement)
    backfill(apps, using=connection)


def unindex(apps, schema_editor):
    connection = schema_editor.connection
    statements = POSTGRES_REVERSE_SQL if connection.vendor == "postgresql" else SQLITE_REVERSE_SQL
    if connection.vendor in ("postgresql", "sqlite"):
        for statement in statements:
            schema_editor.execute(statement)
    # 0015's rows held a text column this migration dropped: they are gone, and a search
    # after going back finds nothing until they are rebuilt.
    apps.get_model("grading", "RolloutSearch").objects.using(connection.alias).all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("grading", "0015_rollout_search"),
    ]

    operations = [
        migrations.RemoveField(model_name="rolloutsearch", name="text"),
        migrations.CreateModel(
            name="SearchChunk",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("seq", models.PositiveIntegerField()),
                ("text", models.TextField()),
                (
                    "rollout",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="grading.rollout"
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("rollout", "seq"), name="searchchunk_rollout_seq")],
            },
        ),
        migrations.CreateModel(
            name="SearchBacklog",
            fields=[
                (
                    "rollout",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="grading.rollout",
                    ),
                ),
                ("queued_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("run", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="grading.run")),
            ],
        ),
        migrations.RunPython(reindex, unindex),
    ]
