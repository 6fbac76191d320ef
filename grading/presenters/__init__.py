"""What a page shows, built from what the selectors read: chart data, links, view models.
Pure of queries: a presenter takes rows and returns plain data for a template."""
