from django.db import migrations, models


def record_fitted_grader(apps, schema_editor):
    """A calibrated mapping fitted on a chosen grader already says so in its fit's scope; one
    fitted on the newest verdict per group (several versions pooled) names none and stays blank."""
    FactorMapping = apps.get_model("grading", "FactorMapping")
    for mapping in FactorMapping.objects.filter(source="calibrated").only("id", "fit"):
        scope = mapping.fit.get("scope") if isinstance(mapping.fit, dict) else None
        grader = scope.get("grader") if isinstance(scope, dict) else None
        if isinstance(grader, str) and 0 < len(grader) <= 100:
            FactorMapping.objects.filter(pk=mapping.pk).update(grader=grader)


class Migration(migrations.Migration):
    dependencies = [
        ("grading", "0026_juries"),
    ]

    operations = [
        migrations.AddField(
            model_name="factormapping",
            name="grader",
            field=models.CharField(
                blank=True,
                help_text="the grader version (or jury) a calibrated mapping was fitted on; empty for default, manual mappings",
                max_length=100,
            ),
        ),
        migrations.RunPython(record_fitted_grader, migrations.RunPython.noop),
    ]
