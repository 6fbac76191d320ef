"""The grader, pure: a group's workspace in (GroupWorkspace), a tiered result with evidence out
(GraderResult), through backends behind one interface (the LLM grader, the heuristic one) and the
prescreen's scanners. No Django, no models: what runs it lives in grading.jobs."""
