from django.apps import AppConfig


class GradingConfig(AppConfig):
    name = "grading"
    verbose_name = "Runs, groups and grading"

    def ready(self):
        from grading.api import schema  # noqa: F401  registers the token scheme with drf-spectacular
        from grading.verdicts.deliberation import on_verdict_recorded
        from grading.verdicts.signals import verdict_recorded

        verdict_recorded.connect(on_verdict_recorded, dispatch_uid="grading.juries")
        # After the jury's receiver: a verdict the jury made on this one's arrival is counted.
        from grading.verdicts.disagreements import on_verdict_recorded as refresh_disagreement_on_verdict

        verdict_recorded.connect(refresh_disagreement_on_verdict, dispatch_uid="grading.disagreements")
