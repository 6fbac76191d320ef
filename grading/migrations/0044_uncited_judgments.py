from django.db import migrations, models

# The rule as it stood when uncited judgments were first stored
# (grading.grader.evidence.is_uncited), frozen here as migrations freeze models.
NEGATIVE_TIERS = ("T2", "T3")
LOW_SCORE = 2


def mark_uncited(apps, schema_editor):
    """Judgments stored before the mark that are uncited: a grader's (not a person's, whose
    ranking a waiting jury took) that speaks against its rollout and cites nothing. Only
    verdicts posted from elsewhere without evidence could hold one, and juries made of them."""
    RolloutGrade = apps.get_model("grading", "RolloutGrade")
    candidates = RolloutGrade.objects.filter(verdict__settled_by="", evidence=[]).values_list("id", "tier", "cheat", "scores")
    ids = [
        pk
        for pk, tier, cheat, scores in candidates.iterator(chunk_size=2000)
        if tier in NEGATIVE_TIERS
        or cheat
        or any(isinstance(s, int) and s <= LOW_SCORE for s in (scores if isinstance(scores, dict) else {}).values())
    ]
    for start in range(0, len(ids), 2000):
        RolloutGrade.objects.filter(pk__in=ids[start : start + 2000]).update(uncited=True)


class Migration(migrations.Migration):
    dependencies = [
        ("grading", "0043_scanner_reads"),
    ]

    operations = [
        migrations.AddField(
            model_name="rolloutgrade",
            name="uncited",
            field=models.BooleanField(
                db_default=False,
                default=False,
                help_text="a tier below T1, a low score or a cheat flag given without a citation",
            ),
        ),
        migrations.RunPython(mark_uncited, migrations.RunPython.noop, elidable=True),
    ]
