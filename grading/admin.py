from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.utils import timezone

from grading.health.services import set_health_thresholds
from grading.health.warnings import Thresholds, ThresholdsRefused
from grading.jobs.policy import PolicyError, check_policy
from grading.models import (
    ApiToken,
    Grader,
    GraderVersion,
    Group,
    Jury,
    Membership,
    Project,
    Rollout,
    RolloutContent,
    Run,
    Step,
    Task,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = ["name", "description", "future_history_prefixes", "health_thresholds"]

    def clean_health_thresholds(self):
        """The same check as the Health warnings page and the API: each bad field named."""
        value = self.cleaned_data.get("health_thresholds")
        if value is None or value == "":
            return {}
        if not isinstance(value, dict):
            raise ValidationError('An object of thresholds, e.g. {"window": 12, "entropy_rise": 0.2}; {} for the defaults.')
        try:
            return Thresholds.checked(value).overrides()
        except ThresholdsRefused as exc:
            raise ValidationError([f"{name} {message}" for name, message in exc.errors.items()]) from None


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectForm
    list_display = ["name", "created_at", "thresholds"]
    search_fields = ["name"]
    inlines = [MembershipInline]
    readonly_fields = ["health_thresholds_updated_by", "health_thresholds_updated_at"]
    fieldsets = [
        (None, {"fields": ["name", "description", "future_history_prefixes"]}),
        (
            "Health warnings",
            {
                "fields": ["health_thresholds", "health_thresholds_updated_by", "health_thresholds_updated_at"],
                "description": "Only the thresholds that differ from the defaults, e.g. "
                '<code>{"window": 12, "entropy_rise": 0.2}</code>; <code>{}</code> for the defaults. '
                "The project's admins change them on its Health warnings page, each explained there.",
            },
        ),
    ]

    @admin.display(description="health thresholds")
    def thresholds(self, obj: Project) -> str:
        changed = Thresholds.from_dict(obj.health_thresholds).overrides()
        return ", ".join(f"{name} {value:g}" for name, value in changed.items()) or "defaults"

    def save_model(self, request, obj, form, change):
        # New thresholds go through the service (who and when, the log line); the rest as usual.
        if "health_thresholds" not in form.changed_data:
            return super().save_model(request, obj, form, change)
        values = obj.health_thresholds
        obj.health_thresholds = (form.initial.get("health_thresholds") or {}) if change else {}
        super().save_model(request, obj, form, change)
        set_health_thresholds(project=obj, user=request.user, values=values)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role", "created_at"]
    list_filter = ["role", "project"]
    search_fields = ["user__username", "project__name"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "user", "project", "name", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["project"]
    readonly_fields = ["prefix", "digest", "created_at", "last_used_at"]
    search_fields = ["user__username", "prefix", "name"]
    actions = ["revoke"]

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset):
        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "baseline", "auto_grade", "grading_deadline_seconds", "created_at"]
    list_filter = ["project", "baseline", "auto_grade"]

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)

        class PolicyCheckedForm(form):
            def clean(self):  # the same checks as the API and the run page (an LLM grader must be configured)
                data = super().clean()
                policy = {k: data[k] for k in ("baseline", "auto_grade", "grading_deadline_seconds") if k in data}
                try:
                    check_policy(policy, project=data.get("project") or getattr(self.instance, "project", None))
                except PolicyError as exc:
                    self.add_error(exc.field if exc.field in self.fields else None, str(exc))
                else:
                    data.update(policy)  # a defined grader's bare name, pinned to its newest version
                return data

        return PolicyCheckedForm

    search_fields = ["name"]


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ["run", "number", "created_at"]
    list_filter = ["run"]
    list_select_related = ["run__project"]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["instance_id", "repo", "run"]
    list_filter = ["run"]
    search_fields = ["instance_id", "repo"]
    list_select_related = ["run__project"]


@admin.register(Group)
class GroupAdmin(admin.ModelAdmin):
    list_display = ["uid", "run", "step", "n_rollouts", "n_passed", "is_mixed", "created_at"]
    list_filter = ["is_mixed", "run"]
    search_fields = ["uid", "task__instance_id"]
    list_select_related = ["run__project", "step__run__project"]
    raw_id_fields = ["run", "step", "task"]


@admin.register(Rollout)
class RolloutAdmin(admin.ModelAdmin):
    list_display = ["group", "index", "reward", "passed", "exit_status", "n_messages", "source_format"]
    list_filter = ["passed", "source_format"]
    search_fields = ["group__uid"]
    list_select_related = ["group"]
    raw_id_fields = ["group"]


@admin.register(RolloutContent)
class RolloutContentAdmin(admin.ModelAdmin):
    list_display = ["rollout"]
    raw_id_fields = ["rollout"]
    list_select_related = ["rollout__group"]


from grading.models import (  # noqa: E402
    AdvantageResult,
    CheatDecision,
    FactorMapping,
    MappingActivation,
    RolloutGrade,
    StepComputation,
    Verdict,
)


@admin.register(FactorMapping)
class FactorMappingAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "project", "source", "bands", "created_at"]
    list_filter = ["source", "project"]


@admin.register(MappingActivation)
class MappingActivationAdmin(admin.ModelAdmin):
    list_display = ["run", "mapping", "activated_by", "created_at", "reason"]
    list_select_related = ["run__project", "mapping", "activated_by"]


class RolloutGradeInline(admin.TabularInline):
    """A verdict's grades are what the grader said: shown, not edited (advantages, agreement
    and calibration read them)."""

    model = RolloutGrade
    extra = 0
    raw_id_fields = ["rollout"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ["group", "grader", "status", "settled_by", "created_at"]
    list_filter = ["status", "settled_by", "grader"]
    raw_id_fields = ["group"]
    inlines = [RolloutGradeInline]
    list_select_related = ["group"]


@admin.register(CheatDecision)
class CheatDecisionAdmin(admin.ModelAdmin):
    list_display = ["rollout", "source", "confirmed", "decided_by", "decided_at"]
    list_filter = ["source", "confirmed"]
    raw_id_fields = ["rollout"]
    list_select_related = ["rollout__group", "decided_by"]
    # Confirmed or overturned only through the audit queue (reviews.services.audit), which
    # keeps the audit trail and recomputes the step; an edit here would do neither.
    readonly_fields = ["confirmed", "decided_by", "decided_at"]


class ComputedOnly:
    """Rows the advantage engine writes; editing one by hand would make exports lie."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(StepComputation)
class StepComputationAdmin(ComputedOnly, admin.ModelAdmin):
    list_display = ["step", "mapping", "stale", "n_rows", "computed_at"]
    list_filter = ["stale"]
    list_select_related = ["step__run__project", "mapping"]
    exclude = ["parquet"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("parquet")


@admin.register(AdvantageResult)
class AdvantageResultAdmin(ComputedOnly, admin.ModelAdmin):
    list_display = ["uid", "index", "step_number", "mapping_label", "status", "advantage", "redistributed_advantage"]
    list_filter = ["status", "mapping_label"]
    search_fields = ["uid", "instance_id"]
    raw_id_fields = ["rollout", "step", "verdict", "mapping"]


from grading.models import ImportJob  # noqa: E402


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "run", "step", "format", "status", "progress_done", "progress_total", "created_at"]
    raw_id_fields = ["run"]
    list_filter = ["status", "project"]


class VersionedOnly:
    """Graders and juries are versioned: a change is a new version, made where the version is
    checked (POST /api/v1/juries/, grading.registry.versions), so the admin site only shows them."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Jury)
class JuryAdmin(VersionedOnly, admin.ModelAdmin):
    list_display = ["name", "version", "project", "rule", "max_gap", "on_abstain", "created_at"]
    list_filter = ["project", "rule", "on_abstain"]
    search_fields = ["name"]


class GraderVersionInline(admin.TabularInline):
    model = GraderVersion
    extra = 0
    fields = readonly_fields = ("name", "model", "endpoint_env", "prompt_version", "guide_version", "created_at")
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Grader)
class GraderAdmin(VersionedOnly, admin.ModelAdmin):
    list_display = ["name", "backend", "project", "created_at"]
    list_filter = ["project", "backend"]
    search_fields = ["name"]
    inlines = [GraderVersionInline]
