"""The method's writes: mappings (read), their activation, staleness, and the computation of a step."""
