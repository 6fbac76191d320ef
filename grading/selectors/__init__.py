"""Reads for pages and the API, one module per concept; import the module that holds a read
(`from grading.selectors import runs`, `from grading.selectors.verdicts import shown_verdict`):
nothing is re-exported here.

health (the database), projects (projects, members, tokens), runs, steps, totals (groups added
up), groups, rollouts, lines (a stored group in its wire shape), verdicts (as people see them),
imports (import jobs, disk), grading_jobs (a step's grading page), graders (graders, juries).
"""
