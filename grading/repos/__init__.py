"""The grader's shared workspace on disk: repository mirrors, every rollout's state as a commit,
reads and searches at those states, and targeted checks run in a sandbox. Pure: no Django.

- `types`: the shapes the rest of the project sees (errors, patch application, limits, results).
- `source`: a task's `repo` resolved through a URL template into a bare mirror cache.
- `states`: a rollout's patch applied at the base commit, recorded as a commit in that mirror.
- `view`: read, list, grep and diff at `base` or at a rollout's state; worktrees on demand.
- `sandbox`: run one command in a worktree with no network, a throwaway writable layer and caps.

The Django side (grading.registry.workspaces) builds a `RepoView` from settings; the grader's tools
(grading.grader.tools) call it. Nothing here runs until a tool asks, so a group graded without
the repository tools costs nothing on disk.
"""
