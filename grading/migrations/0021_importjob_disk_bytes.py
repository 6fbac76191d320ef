from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("grading", "0020_service_accounts_and_throttle_counts"),
    ]

    operations = [
        migrations.AddField(
            model_name="importjob",
            name="disk_bytes",
            field=models.PositiveBigIntegerField(default=0),
        ),
    ]
