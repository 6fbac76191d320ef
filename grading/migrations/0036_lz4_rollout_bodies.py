"""Rollout bodies compressed with lz4 where the server has it (PostgreSQL 14+ built with lz4).

A post's cost on the database is mostly compressing its bodies into TOAST: lz4 stores the
same jsonb about twice as fast as the default pglz, a little smaller, and decompresses several
times faster for the pages that read them back (docs/benchmarks.md, "A step at the method's
size"). Values already stored keep their compression; new ones use lz4. Elsewhere, nothing.
"""

from django.db import migrations

COLUMNS = [
    ("grading_rolloutcontent", "messages"),
    ("grading_rolloutcontent", "patch"),
    ("grading_rolloutcontent", "tests"),
    ("grading_rolloutcontent", "test_log"),
    ("grading_rolloutcontent", "metadata"),
    ("grading_patchhighlight", "hunks"),
]


def set_compression(method: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for table, column in COLUMNS:
            schema_editor.execute(
                f"DO $$ BEGIN ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {method}; "
                "EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN NULL; END $$"
            )

    return run


class Migration(migrations.Migration):
    dependencies = [("grading", "0035_patch_highlight")]

    operations = [migrations.RunPython(set_compression("lz4"), set_compression("default"))]
