"""A project's rubric guide: read (the defaults where it has not been edited) and edited by its admins."""

from __future__ import annotations

from django.db import transaction

from grading.method.guide import DEFAULT_GUIDE, Guide, guide_from_fields, guide_from_json, guide_json
from grading.models import Project, RubricGuide


def guide_for(project: Project | int | None) -> Guide:
    """The project's guide; the method's default text where it has none. One query."""
    if project is None:
        return DEFAULT_GUIDE
    project_id = project if isinstance(project, int) else project.pk
    row = RubricGuide.objects.filter(project_id=project_id).only("tiers", "dimensions").first()
    return DEFAULT_GUIDE if row is None else guide_from_json(row.tiers, row.dimensions)


def guide_with_edit(project: Project) -> tuple[Guide, RubricGuide | None]:
    """The project's guide and its stored edit (who changed it, when), for the guide page. One query."""
    row = RubricGuide.objects.filter(project=project).select_related("updated_by").first()
    return (DEFAULT_GUIDE if row is None else guide_from_json(row.tiers, row.dimensions)), row


@transaction.atomic
def save_guide(*, project: Project, user, data) -> RubricGuide:
    """Store an edited guide from form fields (all of it or nothing; GuideError names each bad field)."""
    guide = guide_from_fields(data)
    tiers, dimensions = guide_json(guide)
    row, _ = RubricGuide.objects.update_or_create(
        project=project, defaults={"tiers": tiers, "dimensions": dimensions, "updated_by": user}
    )
    return row


def reset_guide(*, project: Project) -> None:
    """Back to the method's default text."""
    RubricGuide.objects.filter(project=project).delete()
