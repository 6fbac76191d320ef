"""Group.to_judge: whether a group's passing rollouts are graded and judged (a mixed group, or a
blind comparison's cross-run group, Group.in_comparison), kept by the database. The review
queue's two partial indexes now ask it instead of is_mixed; every existing group keeps its
state (to_judge = is_mixed, as no comparison exists yet)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("grading", "0044_uncited_judgments"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="group", name="group_review_queue"),
        migrations.RemoveIndex(model_name="group", name="group_review_queue_split"),
        migrations.AddField(
            model_name="group",
            name="in_comparison",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="group",
            name="to_judge",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.ExpressionWrapper(
                    models.Q(("is_mixed", True), ("in_comparison", True), _connector="OR"), output_field=models.BooleanField()
                ),
                output_field=models.BooleanField(),
            ),
        ),
        migrations.AddIndex(
            model_name="group",
            index=models.Index(
                condition=models.Q(("awaits_review", True), ("to_judge", True)),
                fields=["run", "-has_valid_verdict", "-credit_moved", "step_number", "uid"],
                name="group_review_queue",
            ),
        ),
        migrations.AddIndex(
            model_name="group",
            index=models.Index(
                condition=models.Q(("awaits_review", True), ("to_judge", True)),
                fields=["run", "-awaits_person", "-grader_gap", "-has_valid_verdict", "-credit_moved", "step_number", "uid"],
                name="group_review_queue_split",
            ),
        ),
    ]
