"""Blind quality evaluations between two runs or checkpoints (docs/user-guide.md, "Blind
comparisons between two runs or checkpoints").

- services: build a comparison's cross-run groups from two sides' passing rollouts
- figures: the evaluation's figures from judged groups, with bootstrap intervals (pure)
"""
