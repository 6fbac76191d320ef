"""Is the run healthy: the trainer's step metrics beside the desk's own figures, and the
warnings they raise. `metrics` (pure) checks a post of metrics; `warnings` (pure) reads the
series for the method's failure signatures; `services` stores metrics."""
