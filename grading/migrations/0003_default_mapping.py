from django.db import migrations

DEFAULT_BANDS = {"T1": [1.0, 1.0], "T2": [0.85, 0.70], "T3": [0.50, 0.50]}


def create_default(apps, schema_editor):
    FactorMapping = apps.get_model("grading", "FactorMapping")
    FactorMapping.objects.get_or_create(
        name="default",
        version=1,
        defaults={
            "bands": DEFAULT_BANDS,
            "source": "default",
            "note": "docs/method.md §3: T1 -> 1.0; T2 -> band [0.85 .. 0.70]; T3 -> 0.50",
        },
    )


def remove_default(apps, schema_editor):
    apps.get_model("grading", "FactorMapping").objects.filter(name="default", version=1, project__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("grading", "0002_method")]
    operations = [migrations.RunPython(create_default, remove_default)]
