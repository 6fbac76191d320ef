from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Human review"

    def ready(self):
        from grading.grader.hooks import verdict_recorded
        from reviews.receivers import refresh_review_on_verdict

        verdict_recorded.connect(refresh_review_on_verdict, dispatch_uid="reviews.refresh_review_on_verdict")
