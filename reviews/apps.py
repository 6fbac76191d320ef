from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Human review"

    def ready(self):
        from grading.projects import viewers
        from grading.verdicts.signals import verdict_recorded
        from reviews.receivers import refresh_review_on_verdict
        from reviews.selectors.lanes import blind_view_for

        verdict_recorded.connect(refresh_review_on_verdict, dispatch_uid="reviews.refresh_review_on_verdict")
        viewers.register(blind_view_for)  # who sees a group blind to its producer (the group API asks)
