"""Waiting for a step: how far its grading has come and whether its advantages are final, the
event-loop watcher, and the caps on trainers waiting. Below it: grading.verdicts, grading.registry."""
