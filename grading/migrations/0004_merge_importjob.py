# Merges the two branches that both start after 0001_initial (0002_importjob and
# 0002_method/0003_default_mapping), so `migrate` sees one leaf. No operations.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("grading", "0002_importjob"),
        ("grading", "0003_default_mapping"),
    ]

    operations = []
