"""Cheat signals name who raised them and carry their own evidence (the audit by rollout).

Signals stored before this say their author only in the reason ("flagged by <name>…"), and a
grader flag's evidence is on the grader's RolloutGrade: both are copied onto the signal. A
search signal's auditor was never stored; it stays unnamed.
"""

from django.db import migrations, models

PREFIX = "flagged by "


def _author(source: str, reason: str) -> str:
    if source == "prescreen":
        return "prescreen"
    if source in ("grader", "reviewer") and reason.startswith(PREFIX):
        return reason[len(PREFIX) :].split(":", 1)[0].strip()[:150]
    return ""


def backfill(apps, schema_editor):
    CheatDecision = apps.get_model("grading", "CheatDecision")
    RolloutGrade = apps.get_model("grading", "RolloutGrade")
    changed = []
    for signal in CheatDecision.objects.only("id", "source", "reason", "rollout_id").iterator(chunk_size=2000):
        signal.author = _author(signal.source, signal.reason or "")
        if signal.source == "grader":
            grade = (
                RolloutGrade.objects.filter(rollout_id=signal.rollout_id, cheat=True, verdict__grader=signal.author)
                .only("evidence")
                .first()
            )
            items = grade.evidence if grade is not None and isinstance(grade.evidence, list) else []
            signal.evidence = [i for i in items if isinstance(i, dict)]
        changed.append(signal)
        if len(changed) >= 2000:
            CheatDecision.objects.bulk_update(changed, ["author", "evidence"])
            changed = []
    CheatDecision.objects.bulk_update(changed, ["author", "evidence"])


class Migration(migrations.Migration):
    dependencies = [
        ("grading", "0017_calibration_minimum"),
    ]

    operations = [
        migrations.AddField(
            model_name="cheatdecision",
            name="author",
            field=models.CharField(blank=True, max_length=150),
        ),
        migrations.AddField(
            model_name="cheatdecision",
            name="evidence",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
