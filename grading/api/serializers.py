from rest_framework import serializers

from grading.models import Group


class GroupSummarySerializer(serializers.ModelSerializer):
    run = serializers.CharField(source="run.name")
    step = serializers.IntegerField(source="step.number")
    instance_id = serializers.CharField(source="task.instance_id")
    n_failed = serializers.IntegerField()

    class Meta:
        model = Group
        fields = ["uid", "run", "step", "instance_id", "n_rollouts", "n_passed", "n_failed", "n_unknown", "is_mixed", "created_at"]


class LineErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    error = serializers.CharField()
    uid = serializers.CharField(required=False)


class CountsSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class GroupCountsSerializer(CountsSerializer):
    extended = serializers.IntegerField()


class IngestReportSerializer(serializers.Serializer):
    lines = serializers.IntegerField()
    bytes = serializers.IntegerField()
    groups = GroupCountsSerializer()
    rollouts = CountsSerializer()
    refused = serializers.IntegerField()
    errors = LineErrorSerializer(many=True)
    errors_truncated = serializers.BooleanField()
    aborted = serializers.CharField(allow_null=True)
