"""Plain helpers the tests share, one module per concern (fixtures live in the conftest files).

- vendored: the vendored data by path (FIXTURES, VECTORS, MINI_SWE_AGENT, ...), `vector_cases`
- groups: gagar-group/1 lines built in a test (`small_group`, `line`, `jsonl`)
- real_groups: groups built from the real trajectories (`load_real_groups`, `load_real_long_groups`,
  `multi_model_group`, `scratch_files_group`)
- ingest: ingest through the API (`post_lines`, `post_groups`) or the service (`ingest_groups`)
- people: `member(username, project, role)`
- desk: the review desk as a person meets it (`as_lanes`, `judgment_post`, `group_url`)
- audit_world: the cheat audit's groups and signals
- workers: real Celery workers on the test database
- served: the site served by gunicorn, the waits process and nginx, as in production
- fake_openai: a real local chat completions server playing a scripted model
- import_files: small files shaped like the real harness outputs the importers read
- trajectories: crafted trajectories and workspaces for the graders
- naive_agreement: the agreement figures computed the straightforward way
- routes: every route of the site, filled in for the tests that walk them all
- browser: driving the site in real Chromium
- trainers: what the trainer framework tests share
- parallel: what the test processes of `make test` (pytest-xdist) must not share
- gitrepos: git repositories built in a test (a tiny package, real history from an installed package),
  patches made on them, and a plain `git apply` to compare the workspace with
"""
