from django.contrib import admin

from reviews.models import Assignment, CheatAudit, GroupReview, Judgment, JudgmentItem, Reveal, ReviewPolicy


@admin.register(ReviewPolicy)
class ReviewPolicyAdmin(admin.ModelAdmin):
    list_display = ("project", "overlap", "blind", "lease_minutes", "updated_at")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("group", "reviewer", "status", "blind", "revealed_early", "created_at", "finished_at")
    list_filter = ("status", "blind", "revealed_early")
    raw_id_fields = ("group", "reviewer")
    search_fields = ("group__uid", "reviewer__username")


class JudgmentItemInline(admin.TabularInline):
    """A submitted judgment is a record (agreement, calibration and labels read it, and their
    cached figures assume it never changes): shown, not edited. A wrong one is settled by
    adjudication, or deleted with its judgment."""

    model = JudgmentItem
    raw_id_fields = ("rollout",)
    extra = 0

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ("group", "reviewer", "kind", "blind", "reason", "created_at")
    list_filter = ("kind", "blind", "reason")
    raw_id_fields = ("group", "reviewer", "assignment")
    search_fields = ("group__uid", "reviewer__username")
    inlines = [JudgmentItemInline]


@admin.register(GroupReview)
class GroupReviewAdmin(admin.ModelAdmin):
    list_display = ("group", "n_reviews", "needs_adjudication", "adjudicated", "version", "updated_at")
    list_filter = ("needs_adjudication", "adjudicated")
    raw_id_fields = ("group",)


@admin.register(Reveal)
class RevealAdmin(admin.ModelAdmin):
    list_display = ("group", "user", "reason", "verdict", "created_at")
    list_filter = ("reason",)
    raw_id_fields = ("group", "user", "verdict")


@admin.register(CheatAudit)
class CheatAuditAdmin(admin.ModelAdmin):
    list_display = ("decision", "auditor", "confirmed", "created_at")
    list_filter = ("confirmed",)
    raw_id_fields = ("decision", "auditor")
