"""How far the grader agrees with people (docs/method.md section 5). Pure: stdlib, NumPy, pandas.

A package by concept, each module pure (stdlib, NumPy, pandas; no Django):

- `frame`: the long frame every frame-level figure takes (one row per rollout and rater),
  tier codes, the people's consensus per rollout (`consensus_table`);
- `groups`: the frame reduced once to per-group sufficient statistics (`group_statistics`);
- `figures`: the figures themselves — exact agreement, confusion, quadratic κ, ordinal α,
  τ-b, pairwise accuracy, top-1, cheat precision / recall / F1 — on arrays, on a frame,
  or from summed statistics (`figures_from_sums`);
- `report`: every figure with its bootstrap interval over groups (`agreement_report`),
  the people-vs-people ceiling (`ceiling_report`) and the generic `bootstrap_ci`.

Every public name is importable from here as well.

Worked example: one group of three, the grader and one person (bob).

>>> import pandas as pd
>>> frame = pd.DataFrame({
...     "group": ["g"] * 6,
...     "rollout": [0, 1, 2] * 2,
...     "rater": ["grader"] * 3 + ["bob"] * 3,
...     "tier": ["T1", "T2", "T3", "T1", "T3", "T3"],
...     "rank": [1, 2, 3, 1, 3, 2],
... })
>>> table = consensus_table(frame)
>>> table[["rollout", "grader_tier", "human_tier"]].values.tolist()
[[0, 1, 1], [1, 2, 3], [2, 3, 3]]
>>> exact_agreement(table.grader_tier, table.human_tier)
0.6666666666666666
>>> round(quadratic_kappa(table.grader_tier, table.human_tier), 6)
0.8
>>> confusion_matrix(table.grader_tier, table.human_tier).tolist()
[[1, 0, 0], [0, 0, 1], [0, 0, 1]]
>>> round(kendall_tau_b([1, 2, 3], [1, 3, 2]), 6)
0.333333
>>> mean_group_tau(frame), pairwise_accuracy(frame), top1_agreement(frame)
(0.3333333333333333, 0.6666666666666666, 1.0)
>>> cheat_scores([True, True, False], [True, False, False])
{'precision': 0.5, 'recall': 1.0, 'f1': 0.6666666666666666}

Every figure gets a 95 % interval by resampling groups:

>>> est, low, high = bootstrap_ci(lambda gs: sum(gs) / len(gs), [0.5, 0.7, 0.9], n_boot=500, seed=1)
>>> round(est, 6), 0.5 <= low <= est <= high <= 0.9
(0.7, True)

The page and the API ask for everything at once. `agreement_report` reduces each group
to a row of counts once, so a resample is a weighted sum of rows and all resamples are
one matrix product. A second group h, which bob and dan both judged, with cheat calls:

>>> h = pd.DataFrame({
...     "group": ["h"] * 9,
...     "rollout": [0, 1, 2] * 3,
...     "rater": ["grader"] * 3 + ["bob"] * 3 + ["dan"] * 3,
...     "tier": ["T2", "T2", "T1", "T2", "T3", "T1", "T2", "T2", "T1"],
...     "rank": [2, 3, 1, 2, 3, 1, 2, 3, 1],
...     "cheat": [False, True, False, False, True, False, False, False, False],
... })
>>> both = pd.concat([frame.assign(cheat=False), h])
>>> report = agreement_report(both, n_boot=200, seed=0)
>>> kappa = report["kappa"]
>>> round(kappa.value, 6), kappa.n, kappa.lo <= kappa.value <= kappa.hi
(0.76, 6, True)
>>> report["tau"].n, report["top1"].value, report["cheat_recall"].value
(2, 1.0, 1.0)
>>> report["confusion_T2_T3"]  # of the rollouts the grader called T2, the share people called T3
Figure(value=0.6666666666666666, lo=0.5, hi=1.0, n=3)

The ceiling: the same figures between the first two people of each group both judged
(here only h; the second person, dan, plays the grader's part):

>>> ceiling = ceiling_report(both, n_boot=200, seed=0)
>>> ceiling["exact_agreement"].value, ceiling["tau"].value, ceiling["cheat_precision"].n
(0.6666666666666666, 1.0, 0)

Edge cases, decided here once: a figure with nothing to measure (no pairs people
ordered, κ when both sides use one tier, τ-b when one side is all ties) is NaN, and
NaN resamples are left out of an interval. A grader tie on a pair people ordered
strictly counts as a miss. A rater judges a rollout at most once (a second row is an
error, not a silent pick).
"""

from __future__ import annotations

from grading.method.intervals import bootstrap_ci as bootstrap_ci
from grading.method.tiers import LEVELS as LEVELS
from grading.method.tiers import TIERS as TIERS
from reviews.stats.agreement.figures import FIGURES as FIGURES
from reviews.stats.agreement.figures import cheat_scores as cheat_scores
from reviews.stats.agreement.figures import confusion_matrix as confusion_matrix
from reviews.stats.agreement.figures import exact_agreement as exact_agreement
from reviews.stats.agreement.figures import figures_from_sums as figures_from_sums
from reviews.stats.agreement.figures import group_taus as group_taus
from reviews.stats.agreement.figures import kendall_tau_b as kendall_tau_b
from reviews.stats.agreement.figures import krippendorff_alpha as krippendorff_alpha
from reviews.stats.agreement.figures import mean_group_tau as mean_group_tau
from reviews.stats.agreement.figures import pairwise_accuracy as pairwise_accuracy
from reviews.stats.agreement.figures import pairwise_counts as pairwise_counts
from reviews.stats.agreement.figures import quadratic_kappa as quadratic_kappa
from reviews.stats.agreement.figures import top1_agreement as top1_agreement
from reviews.stats.agreement.figures import top1_hits as top1_hits
from reviews.stats.agreement.frame import FRAME_COLUMNS as FRAME_COLUMNS
from reviews.stats.agreement.frame import GRADER as GRADER
from reviews.stats.agreement.frame import consensus_table as consensus_table
from reviews.stats.agreement.frame import reliability_matrix as reliability_matrix
from reviews.stats.agreement.frame import tier_codes as tier_codes
from reviews.stats.agreement.groups import STATISTICS as STATISTICS
from reviews.stats.agreement.groups import GroupStatistics as GroupStatistics
from reviews.stats.agreement.groups import group_statistics as group_statistics
from reviews.stats.agreement.report import Figure as Figure
from reviews.stats.agreement.report import agreement_report as agreement_report
from reviews.stats.agreement.report import ceiling_frame as ceiling_frame
from reviews.stats.agreement.report import ceiling_report as ceiling_report
from reviews.stats.agreement.report import report_from_statistics as report_from_statistics
from reviews.stats.agreement.report import resample_sums as resample_sums
