from django.db import migrations
from django.db.models import Case, Count, F, IntegerField, OuterRef, Subquery, Value, When
from django.db.models.functions import Coalesce, Mod
from django.db.models.lookups import LessThan

OVERLAP_STRIDE = 19  # reviews.selectors.queue.OVERLAP_STRIDE
DEFAULT_OVERLAP = 0.2  # ReviewPolicy.overlap's default, for projects that never had a policy


def fill_awaits_review(apps, schema_editor):
    """Whether each group still wants submitted reviews under its project's review policy
    (reviews.services.queue.refresh_awaits_review, as of this migration)."""
    Group = apps.get_model("grading", "Group")
    Project = apps.get_model("grading", "Project")
    Assignment = apps.get_model("reviews", "Assignment")
    ReviewPolicy = apps.get_model("reviews", "ReviewPolicy")
    overlaps = dict(ReviewPolicy.objects.values_list("project_id", "overlap"))
    submitted = (
        Assignment.objects.filter(group=OuterRef("pk"), status="submitted")
        .order_by()
        .values("group")
        .annotate(n=Count("pk"))
        .values("n")
    )
    for project_id in Project.objects.values_list("pk", flat=True):
        threshold = round(overlaps.get(project_id, DEFAULT_OVERLAP) * 100)
        wanted = Case(
            When(LessThan(Mod(F("id") * OVERLAP_STRIDE, 100), threshold), then=Value(2)),
            default=Value(1),
            output_field=IntegerField(),
        )
        Group.objects.filter(run__project_id=project_id).update(
            awaits_review=LessThan(Coalesce(Subquery(submitted, output_field=IntegerField()), 0), wanted)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0001_initial"),
        ("grading", "0011_group_review_queue_order"),
    ]

    operations = [migrations.RunPython(fill_awaits_review, migrations.RunPython.noop)]
