"""The graders a project has: names and immutable versions, defined and external graders, juries
as definitions, the backend a name runs as, and the workspace and check budget a grader is given.
Below it: grading.grader (pure)."""
