"""Running graders: queue a step's groups, grade one group, schedule, recover, campaigns, scans,
the run's grading policy, and the Celery entry points (tasks.py, which only workers import).
Below it: grading.waits, grading.verdicts, grading.registry, grading.grader."""
