"""Every model of the grading app, re-exported so `from grading.models import Group` and the
migrations keep working whichever module a model lives in.

- projects: tenancy (projects, members and roles, API tokens)
- runs: the store (runs, steps, tasks, groups, rollouts and their bodies, their patches
  highlighted ahead, import jobs, trainers waiting for a step)
- grades: what the grader said (verdicts, rollout grades, checks, cheat decisions, grading jobs,
  juries) and each project's check policy
- graders: a project's graders and their versions (what Verdict.grader names), and campaigns
  running one on a scope of groups
- method: factor mappings, their activations, step computations and stored advantages,
  each project's rubric guide and calibration minimum
- scanners: the scanners' validation set (people's labels of rollouts, per scanner category)
  and a project's own scanners (pattern or LLM, by version)
- search: the search index (one row of searchable text per rollout)
- comparisons: blind quality evaluations between two runs or checkpoints, and which side each
  of their rollouts came from
- throttle: shared attempt counts (login throttling) where no Redis is configured
"""

from grading.models.comparisons import Comparison as Comparison
from grading.models.comparisons import ComparisonEntry as ComparisonEntry
from grading.models.graders import Campaign as Campaign
from grading.models.graders import CampaignGroup as CampaignGroup
from grading.models.graders import Grader as Grader
from grading.models.graders import GraderVersion as GraderVersion
from grading.models.grades import CheatDecision as CheatDecision
from grading.models.grades import CheckPolicy as CheckPolicy
from grading.models.grades import GradingJob as GradingJob
from grading.models.grades import Jury as Jury
from grading.models.grades import RolloutGrade as RolloutGrade
from grading.models.grades import Verdict as Verdict
from grading.models.grades import VerdictCheck as VerdictCheck
from grading.models.method import AdvantageResult as AdvantageResult
from grading.models.method import CalibrationMinimum as CalibrationMinimum
from grading.models.method import FactorMapping as FactorMapping
from grading.models.method import MappingActivation as MappingActivation
from grading.models.method import RubricGuide as RubricGuide
from grading.models.method import StepComputation as StepComputation
from grading.models.method import StepExport as StepExport
from grading.models.projects import ROLE_CAPABILITIES as ROLE_CAPABILITIES
from grading.models.projects import ApiToken as ApiToken
from grading.models.projects import Capability as Capability
from grading.models.projects import Membership as Membership
from grading.models.projects import Project as Project
from grading.models.projects import Role as Role
from grading.models.projects import ServiceAccount as ServiceAccount
from grading.models.runs import BulkJSONField as BulkJSONField
from grading.models.runs import Group as Group
from grading.models.runs import ImportJob as ImportJob
from grading.models.runs import PatchHighlight as PatchHighlight
from grading.models.runs import Rollout as Rollout
from grading.models.runs import RolloutContent as RolloutContent
from grading.models.runs import Run as Run
from grading.models.runs import Step as Step
from grading.models.runs import StepMetric as StepMetric
from grading.models.runs import StepWaiter as StepWaiter
from grading.models.runs import Task as Task
from grading.models.scanners import ProjectScanner as ProjectScanner
from grading.models.scanners import ScanLabel as ScanLabel
from grading.models.scanners import ScannerRead as ScannerRead
from grading.models.search import RolloutSearch as RolloutSearch
from grading.models.search import SearchBacklog as SearchBacklog
from grading.models.search import SearchChunk as SearchChunk
from grading.models.throttle import ThrottleCount as ThrottleCount
