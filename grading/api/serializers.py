from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from grading.jobs.policy import auto_grader_name
from grading.method.advantage import DEFAULT_MAPPING, MappingSpec
from grading.method.tiers import TIERS
from grading.models import FactorMapping, Group, MappingActivation, Run
from grading.projects.accounts import acting_name


@extend_schema_field(
    {"type": "string", "nullable": True, "description": "the username; for a service account, with the admin who made it"}
)
class ActingNameField(serializers.Field):
    """Who did it, as the audit trail names them (grading.projects.accounts.acting_name)."""

    def __init__(self, **kwargs):
        super().__init__(read_only=True, **kwargs)

    def to_representation(self, user):
        return acting_name(user)


class IsoDateTimeField(serializers.DateTimeField):
    """A datetime as Python's isoformat() writes it (`+00:00`, where DRF's own writes `Z`)."""

    def to_representation(self, value):
        return value.isoformat()


@extend_schema_field(
    {"type": "string", "nullable": True, "description": "the grader version auto-grading uses, e.g. heuristic@1"}
)
class AutoGraderField(serializers.Field):
    """The name of the grader a run's auto-grading uses (grading.jobs.policy.auto_grader_name)."""

    def __init__(self, **kwargs):
        super().__init__(source="*", **kwargs)

    def to_representation(self, run):
        return auto_grader_name(run)


# A run and its policy, as GET/POST/PATCH /api/v1/runs/ answer: the response and its schema
# (component "Run"). `steps` is the `n_steps` its selector counts (grading.selectors.runs.run_list,
# run_with_step_count). A comment, not a docstring: a docstring would be the schema's text.
class RunSerializer(serializers.Serializer):
    name = serializers.CharField()
    baseline = serializers.ChoiceField(Run.Baseline.values)
    auto_grade = serializers.CharField(
        help_text="none, heuristic, llm, or one of the project's defined graders at the version the policy pinned (<name>@<n>)"
    )
    grading_deadline_seconds = serializers.IntegerField()
    grader = AutoGraderField()
    jury = serializers.CharField(
        source="jury.grader",
        allow_null=True,
        default=None,
        help_text="the jury the policy names (jury:<name>@<version>), or null",
    )
    drop_policy = serializers.DictField(
        child=serializers.ChoiceField(["mask", "recompute"]),
        help_text='drop reason -> mask (the default) or recompute; "*" for reasons not named',
    )
    turn_weights = serializers.BooleanField(
        help_text="per-token advantages: rows carry turn weights from the grader's "
        "turn citations (GET /api/v1/advantages/?turn_weights=1)"
    )
    settle_identical = serializers.BooleanField(
        help_text="a mixed group whose passing rollouts' patches are byte-identical is settled without a model "
        'call, as a fallback (settled_by "identical-patches"); off by default'
    )
    description = serializers.CharField()
    created_at = IsoDateTimeField()
    steps = serializers.IntegerField(source="n_steps")


# A step's grading status, as GET /api/v1/steps/{n}/ answers: StepStatus.as_dict() (grading.grader.
# progress) rendered through it, so the response and its schema are one. `deadline` arrives as its
# isoformat() string, which DateTimeField passes through unchanged.
class GradingFailureSerializer(serializers.Serializer):
    group = serializers.CharField(help_text="the group's uid")
    grader = serializers.CharField()
    retries = serializers.IntegerField(help_text="the task's retries after database or broker errors")
    resends = serializers.IntegerField(help_text="times the sweep sent the job again")
    error = serializers.CharField(help_text="why it gave up (at most 500 characters)")


class StepStatusSerializer(serializers.Serializer):
    run = serializers.CharField()
    step = serializers.IntegerField()
    groups = serializers.IntegerField()
    mixed = serializers.IntegerField()
    graded = serializers.IntegerField()
    invalid = serializers.IntegerField()
    timeout = serializers.IntegerField()
    pending = serializers.IntegerField()
    fallback = serializers.IntegerField()
    final = serializers.BooleanField()
    inputs_version = serializers.IntegerField()
    deadline = serializers.DateTimeField(allow_null=True)
    failed = serializers.IntegerField(help_text="groups falling back because their grading gave up (among fallback)")
    failures = GradingFailureSerializer(many=True, help_text="the first five of them, by group uid")
    settled = serializers.IntegerField(
        help_text="groups settled without a model call because their passing patches are byte-identical "
        "(among fallback, not in invalid; the run policy's settle_identical)"
    )
    scanning = serializers.IntegerField(
        help_text="groups the reward-hack scanners have not read yet: the step is not final while any is, "
        "until the run's grading deadline has passed since they were stored (docs/scanners.md)"
    )


# What POST /api/v1/steps/{n}/grade/ answers: the step's status, and how many jobs it queued.
class StepGradingSerializer(StepStatusSerializer):
    queued = serializers.IntegerField(help_text="grading jobs this request queued")


class GroupSummarySerializer(serializers.ModelSerializer):
    run = serializers.CharField(source="run.name")
    step = serializers.IntegerField(source="step.number")
    instance_id = serializers.CharField(source="task.instance_id")
    n_failed = serializers.IntegerField()

    class Meta:
        model = Group
        fields = [
            "uid",
            "run",
            "step",
            "instance_id",
            "n_rollouts",
            "n_passed",
            "n_failed",
            "n_unknown",
            "is_mixed",
            "created_at",
        ]


class LineErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    error = serializers.CharField()
    uid = serializers.CharField(required=False)


class CountsSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class GroupCountsSerializer(serializers.Serializer):  # in IngestReport.as_dict()'s order
    created = serializers.IntegerField()
    extended = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class GradingQueuedSerializer(serializers.Serializer):
    queued = serializers.IntegerField(help_text="mixed groups sent to the run's auto-grader by this request")
    refused = serializers.CharField(allow_null=True, help_text="why the auto-grader could not be asked, if it could not")


# What POST /api/v1/groups/ answers, whatever its status: IngestReport.as_dict() (grading.ingest.
# service) rendered through it, so the response and its schema are one.
class IngestReportSerializer(serializers.Serializer):
    lines = serializers.IntegerField()
    bytes = serializers.IntegerField()
    groups = GroupCountsSerializer()
    rollouts = CountsSerializer()
    refused = serializers.IntegerField()
    # DRF's metaclass moves declared fields off the class, so this shadows no Serializer.errors.
    errors = LineErrorSerializer(many=True)  # type: ignore[assignment]
    errors_truncated = serializers.BooleanField()
    aborted = serializers.CharField(allow_null=True)
    grading = GradingQueuedSerializer()


# --- Factor mappings (docs/method.md §3, §5) ---------------------------------------------------

# Keys of a calibrated mapping's `fit` small enough for a list; the full record (counts,
# judgment ids) is on the mapping's own endpoint.
_FIT_SUMMARY_KEYS = ("f", "k", "q", "intervals", "n_boot", "n_groups", "n_judgments")


def fit_summary(fit: dict) -> dict | None:
    if not fit:
        return None
    summary = {key: fit[key] for key in _FIT_SUMMARY_KEYS if key in fit}
    counts = fit.get("counts")
    if "n_judgments" not in summary and isinstance(counts, list):
        try:
            summary["n_judgments"] = sum(sum(row) for row in counts)
        except TypeError:  # a hand-written fit record; show what there is
            pass
    return summary


class MappingSerializer(serializers.ModelSerializer):
    # A declared field, moved off the class by DRF's metaclass: it shadows no Field.label.
    label = serializers.CharField(  # type: ignore[assignment]
        read_only=True, help_text="name@version, as the advantages export takes it"
    )
    project = serializers.CharField(
        source="project.name",
        allow_null=True,
        read_only=True,
        help_text="empty for the built-in default, shared by every project",
    )
    created_by = ActingNameField()
    fit_summary = serializers.SerializerMethodField()

    class Meta:
        model = FactorMapping
        fields = [
            "id",
            "label",
            "name",
            "version",
            "project",
            "bands",
            "source",
            "grader",
            "fit_summary",
            "note",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields  # immutable: a change is a new version (MappingCreateSerializer)

    @extend_schema_field({"type": "object", "nullable": True, "additionalProperties": True})
    def get_fit_summary(self, mapping: FactorMapping) -> dict | None:
        return fit_summary(mapping.fit)


class MappingListItemSerializer(MappingSerializer):
    active_runs = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="runs of the project for which this mapping is in force now"
    )

    class Meta(MappingSerializer.Meta):
        fields = [*MappingSerializer.Meta.fields, "active_runs"]
        read_only_fields = fields


class MappingDetailSerializer(MappingListItemSerializer):
    class Meta(MappingListItemSerializer.Meta):
        fields = [*MappingListItemSerializer.Meta.fields, "fit"]
        read_only_fields = fields


class MappingRefSerializer(serializers.ModelSerializer):
    label = serializers.CharField(read_only=True)  # type: ignore[assignment]  # a field, as in MappingSerializer

    class Meta:
        model = FactorMapping
        fields = ["id", "label"]
        read_only_fields = fields


class MappingActivationSerializer(serializers.ModelSerializer):
    run = serializers.CharField(source="run.name", read_only=True)
    mapping = MappingRefSerializer(read_only=True)
    activated_by = ActingNameField()

    class Meta:
        model = MappingActivation
        fields = ["id", "run", "mapping", "activated_by", "reason", "overrode_minimum", "created_at"]
        read_only_fields = fields


class ActiveMappingSerializer(serializers.Serializer):
    run = serializers.CharField()
    mapping = MappingSerializer()
    activation = MappingActivationSerializer(
        allow_null=True, help_text="the activation in force; empty while the run has never had one (the built-in default applies)"
    )
    history = MappingActivationSerializer(many=True, help_text="every activation of the run, newest first")


class MappingCreateSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    bands = serializers.JSONField(
        help_text='{"T1": [hi, lo], "T2": [hi, lo], "T3": [hi, lo]}; a single number means hi = lo. Every f in (0, 1], hi >= lo.'
    )
    note = serializers.CharField(required=False, allow_blank=True, default="")

    def validate_bands(self, bands):
        """Checked by the method's own MappingSpec, tier by tier so each error names its tier."""
        if not isinstance(bands, dict):
            raise serializers.ValidationError('must be an object {"T1": [hi, lo], "T2": [hi, lo], "T3": [hi, lo]}')
        try:
            return MappingSpec.from_dict(bands).to_dict()
        except ValueError as exc:
            whole = str(exc)
        if set(bands) != set(TIERS):
            raise serializers.ValidationError(whole)
        per_tier = {}
        for tier in TIERS:
            try:
                MappingSpec.from_dict({**DEFAULT_MAPPING.to_dict(), tier: bands[tier]})
            except ValueError as exc:
                per_tier[tier] = [str(exc)]
        raise serializers.ValidationError(per_tier or whole)


class MappingActivateSerializer(serializers.Serializer):
    run = serializers.CharField(max_length=200, help_text="run name in the project")
    reason = serializers.CharField(help_text="why: kept in the run's activation history")
    force = serializers.BooleanField(
        default=False, help_text="activate a calibrated mapping whose fit is below the project's minimum evidence anyway"
    )
