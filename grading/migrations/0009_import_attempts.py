from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("grading", "0008_training_loop"),
    ]

    operations = [
        migrations.AddField(
            model_name="importjob",
            name="attempts",
            field=models.PositiveSmallIntegerField(default=0),
        ),
    ]
