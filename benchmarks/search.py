"""Benchmark: search over many rollouts on PostgreSQL — query latency, index size, indexing rate.

    DATABASE_URL=postgres://... .venv/bin/python benchmarks/search.py [--rollouts 1000000] [--repeat 4]

Creates its own database `gagar_bench_search` on the server DATABASE_URL points at (dropped
at the end), migrates it (migration 0015: the tsvector column and its GIN index), then:

1. Stores `--rollouts` rollouts (16 per group, 4 runs, 100 steps per run) with small
   synthetic bodies: one assistant message of ~40 words drawn, with their frequencies,
   from the words of the 16 real mini-swe-agent trajectories in tests/fixtures, plus one
   of their real shell commands as the action (about 350 characters of search text per
   rollout). Rows go in with COPY (setup); the search rows are the product's `search_text`
   and `vector_literal`; the GIN index is built after the load (its build time is printed).
2. Times the product's selector (`grading.search.selectors.search_rollouts`: count up to
   COUNT_CAP, one page of 20, the page's rollouts and bodies, hits) for a word, a common
   word, a rare word, a phrase, a prefix, a literal command, and a word scoped to a run and
   a step range; five different terms of each kind, `--repeat` times each: p50 and p95.
3. Prints each relation's size (pg_relation_size: table, TOAST, each index).
4. Indexing rate: 20,000 more rollouts indexed by the product's code
   (`grading.search.index.index_rollouts`: search text in Python, rows COPYed into the
   indexed table, in one transaction) against a raw COPY of the same rows into an
   unindexed table, and a COPY of the built rows into the indexed table (the database's
   share: the GIN index).
5. What the index costs a whole ingest: 4,000 demo rollouts (grading.ingest.demo: turns,
   patches, tests) through `ingest_group_lines` with the index rows, and without them.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from _support import cpu_model, in_process_django, load_average, memory_gib, postgres_version, recreate_database, usable_cores

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DB_NAME = "gagar_bench_search"
TRAJS = ROOT / "tests" / "fixtures" / "mini-swe-agent-gemini-3-pro" / "trajs"
GROUP_SIZE = 16
RUNS = 4
STEPS_PER_RUN = 100
WORDS_PER_BODY = 40
EXTRA = 20_000
INGEST_GROUPS = 250


def vocabulary() -> tuple[list[str], list[int], list[str]]:
    """(words, their counts, commands) from the real trajectories."""
    from grading.search.query import tokens

    counts: Counter[str] = Counter()
    commands: list[str] = []
    for path in sorted(TRAJS.glob("*/*.traj.json")):
        for message in json.loads(path.read_text()).get("messages", []):
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            counts.update(t for t in tokens(text) if len(t) < 30)
            if message.get("role") == "assistant" and "```bash" in text:
                command = text.split("```bash", 1)[1].split("```", 1)[0].strip()
                if command and len(command) < 200:
                    commands.append(command)
    words = [w for w, _ in counts.most_common()]
    return words, [counts[w] for w in words], commands


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--database", default=DB_NAME, help="created and dropped by this script")
    parser.add_argument("--keep", action="store_true", help="keep the database (drop it yourself)")
    args = parser.parse_args()
    admin_url, db_url = in_process_django(args.database)
    started = time.perf_counter()
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection, transaction
        from django.utils import timezone

        from grading.models import Group, Project, Rollout, Run, Step, Task
        from grading.models.bulk import copy_rows
        from grading.search.index import COLUMNS, POSTGRES_SQL, index_rollouts
        from grading.search.query import parse_query
        from grading.search.selectors import SearchScope, search_rollouts
        from grading.search.text import search_text, vector_literal

        call_command("migrate", verbosity=0)
        print(f"machine:   {cpu_model()}, {usable_cores()} cores, {memory_gib()} RAM, PostgreSQL {postgres_version(db_url)}, "
              f"load average {load_average():.2f} at start")
        words, weights, commands = vocabulary()
        rng = random.Random(11)
        print(f"vocabulary: {len(words):,} words and {len(commands):,} commands from {TRAJS.relative_to(ROOT)}")

        project = Project.objects.create(name="bench")
        runs = [Run.objects.create(project=project, name=f"run-{r}") for r in range(RUNS)]
        steps = {(run.pk, s): Step.objects.create(run=run, number=s) for run in runs for s in range(STEPS_PER_RUN)}
        tasks = {run.pk: Task.objects.create(run=run, instance_id="bench__task") for run in runs}
        now = timezone.now()

        def body() -> tuple[list, str]:
            command = rng.choice(commands)
            text = " ".join(rng.choices(words, weights=weights, k=WORDS_PER_BODY))
            return [{"role": "assistant", "content": text, "action": command}], command

        def load(first_group: int, n_rollouts: int, first_rollout: int) -> list[tuple]:
            """Groups, rollouts and bodies by COPY; the (rollout id, run id, step, passed, messages) of each."""
            out = []
            n_groups = (n_rollouts + GROUP_SIZE - 1) // GROUP_SIZE
            group_rows, rollout_rows, content_rows = [], [], []
            rid = first_rollout
            for g in range(first_group, first_group + n_groups):
                run = runs[g % RUNS]
                step = (g // RUNS) % STEPS_PER_RUN
                group_rows.append((g, run.pk, steps[(run.pk, step)].pk, tasks[run.pk].pk, f"bench-{g}@{step}", GROUP_SIZE,
                                   GROUP_SIZE // 2, 0, True, step, False, 0.0, True, now, now))
                for index in range(GROUP_SIZE):
                    if rid >= first_rollout + n_rollouts:
                        break
                    messages, _ = body()
                    passed = index % 2 == 0
                    rollout_rows.append((rid, g, index, 1.0 if passed else 0.0, passed, "Submitted", 1, {}, 0, 0, 0, True,
                                         0, 0, "bench", "", "0" * 64, now))
                    content_rows.append((rid, json.dumps(messages), "", "{}", "", "{}"))
                    out.append((rid, run.pk, step, passed, messages))
                    rid += 1
            copy_rows(connection, "grading_group",
                      ["id", "run_id", "step_id", "task_id", "uid", "n_rollouts", "n_passed", "n_unknown", "is_mixed",
                       "step_number", "has_valid_verdict", "credit_moved", "awaits_review", "created_at", "updated_at"],
                      group_rows)
            copy_rows(connection, "grading_rollout",
                      ["id", "group_id", "index", "reward", "passed", "exit_status", "n_messages", "stats", "patch_files",
                       "patch_added", "patch_removed", "patch_parses", "tests_passed", "tests_failed", "source_format",
                       "source_ref", "content_hash", "created_at", "extra_files", "cluster_label"],
                      ((*r[:7], json.dumps(r[7]), *r[8:], "[]", "") for r in rollout_rows))
            copy_rows(connection, "grading_rolloutcontent", ["rollout_id", "messages", "patch", "tests", "test_log", "metadata"],
                      content_rows)
            return out

        def reset_sequences() -> None:  # rows were COPYed with their ids
            with connection.cursor() as cursor:
                for table in ("grading_group", "grading_rollout"):
                    cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")

        # 1. the corpus ------------------------------------------------------------------
        t0 = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '512MB'")
            cursor.execute("DROP INDEX rolloutsearch_vector")
        chunk = 100_000
        done = 0
        while done < args.rollouts:
            n = min(chunk, args.rollouts - done)
            rows = load(done // GROUP_SIZE + 1, n, done + 1)
            copy_rows(connection, "grading_rolloutsearch", list(COLUMNS),
                      ((rid, run_id, step, passed, text, vector_literal(text)) for rid, run_id, step, passed, text in
                       ((rid, run_id, step, passed, search_text(messages, "", {})) for rid, run_id, step, passed, messages in rows)))
            done += n
        load_s = time.perf_counter() - t0
        sample = search_text(body()[0], "", {})
        print(f"corpus:    {args.rollouts:,} rollouts loaded by COPY in {load_s:.0f} s; search text ~{len(sample)} characters each, "
              f"e.g. {sample[:90]!r}...")
        for statement in POSTGRES_SQL[1:]:
            t0 = time.perf_counter()
            with connection.cursor() as cursor:
                cursor.execute(statement)
            print(f"index:     {statement.split(' ON ')[0].replace('CREATE INDEX ', '')} built in {time.perf_counter() - t0:.0f} s")
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE grading_rolloutsearch")
            cursor.execute("ANALYZE grading_rollout")
            cursor.execute("ANALYZE grading_group")
        reset_sequences()

        # 2. queries ------------------------------------------------------------------------
        common = words[:5]
        middle = [w for w in words[200:400] if len(w) > 4][:5]
        rare = [w for w in words if 4 < len(w) < 20][-200:][::40][:5]
        phrases = []
        for command in commands:
            toks = command.split()
            if len(toks) >= 2 and all(t.isalnum() for t in toks[:2]) and (toks[0], toks[1]) not in phrases:
                phrases.append((toks[0], toks[1]))
        phrases = phrases[:5]
        literals = sorted({c[:24] for c in commands if len(c) >= 12}, key=len)[:: max(1, len(commands) // 40)][:5]
        prefixes = [w[:4] + "*" for w in middle]
        kinds = [
            ("word", [(w, "words", {}) for w in middle]),
            ("common word", [(w, "words", {}) for w in common]),
            ("rare word", [(w, "words", {}) for w in rare]),
            ("phrase", [(f'"{a} {b}"', "words", {}) for a, b in phrases]),
            ("prefix", [(p, "words", {}) for p in prefixes]),
            ("literal", [(lit, "literal", {}) for lit in literals]),
            ("word, run + steps 10-19", [(w, "words", {"run": runs[1], "step_min": 10, "step_max": 19}) for w in middle]),
        ]
        print(f"queries:   search_rollouts (count up to the cap + page of 20 + rollouts + bodies + hits), "
              f"{len(middle)} terms x {args.repeat} after a warm-up pass; load average {load_average():.2f}")
        print(f"{'query':26} {'p50 ms':>8} {'p95 ms':>8} {'matches (median)':>17}  examples")
        for _label, queries in kinds:  # one untimed pass: the plans and the pages the queries read are warm
            for raw, mode, scope in queries:
                search_rollouts(query=parse_query(raw, mode=mode), scope=SearchScope(project=project, **scope), sees_grader=True)
        results = []
        for label, queries in kinds:
            times, counts = [], []
            for _ in range(args.repeat):
                for raw, mode, scope in queries:
                    t0 = time.perf_counter()
                    page = search_rollouts(query=parse_query(raw, mode=mode), scope=SearchScope(project=project, **scope),
                                           sees_grader=True)
                    times.append((time.perf_counter() - t0) * 1000)
                    counts.append(page.count if not page.count_capped else float("inf"))
            median = statistics.median(counts)
            shown = "capped" if median == float("inf") else f"{int(median):,}"
            print(f"{label:26} {percentile(times, 0.5):8.0f} {percentile(times, 0.95):8.0f} {shown:>17}  "
                  f"{', '.join(q[0] for q in queries[:3])}")
            results.append((label, percentile(times, 0.95)))
        # an exact count of a common word, for what COUNT_CAP saves
        with connection.cursor() as cursor:
            from grading.search.selectors import _tsquery

            t0 = time.perf_counter()
            cursor.execute("SELECT count(*) FROM grading_rolloutsearch WHERE vector @@ to_tsquery('simple', %s)",
                           [_tsquery(parse_query(common[0]))])
            exact = cursor.fetchone()[0]
            print(f"exact count of {common[0]!r} without the cap: {exact:,} rows in {(time.perf_counter() - t0) * 1000:.0f} ms")

        # 3. sizes ----------------------------------------------------------------------------
        with connection.cursor() as cursor:
            cursor.execute("""
                SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c
                WHERE c.oid = 'grading_rolloutsearch'::regclass
                   OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = 'grading_rolloutsearch'::regclass)
                   OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'grading_rolloutsearch'::regclass)
                ORDER BY 2 DESC""")
            sizes = cursor.fetchall()
        total = sum(s for _, s in sizes)
        print("sizes:     " + ", ".join(f"{name} {size / 2**20:,.0f} MiB" for name, size in sizes) + f"; total {total / 2**20:,.0f} MiB"
              f" ({total / args.rollouts:,.0f} bytes a rollout)")

        # 4. indexing rate ---------------------------------------------------------------------
        first_group = Group.objects.order_by("-id").values_list("id", flat=True)[0] + 1
        first_rollout = Rollout.objects.order_by("-id").values_list("id", flat=True)[0] + 1
        extra = load(first_group, EXTRA, first_rollout)
        reset_sequences()
        groups = {g.pk: g for g in Group.objects.filter(pk__gte=first_group)}
        rollouts = list(Rollout.objects.filter(pk__gte=first_rollout).order_by("pk"))
        by_id = {rid: messages for rid, *_rest, messages in extra}
        items = [(r, groups[r.group_id], SimpleNamespace(messages=by_id[r.pk], patch="", tests={})) for r in rollouts]
        raw_rows = [(r.pk, groups[r.group_id].run_id, groups[r.group_id].step_number, r.passed, text, vector_literal(text))
                    for r in rollouts for text in [search_text(by_id[r.pk], "", {})]]
        with connection.cursor() as cursor:
            cursor.execute("CREATE TABLE bench_raw (rollout_id bigint, run_id bigint, step_number integer, passed boolean, "
                           "text text, vector text)")
        t0 = time.perf_counter()
        with transaction.atomic():
            copy_rows(connection, "bench_raw", list(COLUMNS), raw_rows)
        raw_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        texts = [vector_literal(search_text(by_id[r.pk], "", {})) for r in rollouts]
        text_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        with transaction.atomic():
            copy_rows(connection, "grading_rolloutsearch", list(COLUMNS), raw_rows)
            indexed_copy_s = time.perf_counter() - t0
            transaction.set_rollback(True)
        del texts
        t0 = time.perf_counter()
        with transaction.atomic():
            index_rollouts(items)
        product_s = time.perf_counter() - t0
        print(f"indexing parts: search_text and vector_literal in Python {EXTRA / text_s:,.0f}/s; COPY of the built rows into "
              f"the indexed table (its GIN index) {EXTRA / indexed_copy_s:,.0f}/s")
        print(f"indexing:  {EXTRA:,} rollouts into the {args.rollouts:,}-row indexed table by index_rollouts: {EXTRA / product_s:,.0f}/s; "
              f"raw COPY of the same rows (text already built) into an unindexed table: {EXTRA / raw_s:,.0f}/s; "
              f"ratio {raw_s / product_s:.2f}x")
        # 5. what indexing costs a whole ingest (rollouts, bodies and the index rows) -----------------
        from orjson import dumps as line

        from grading.ingest import service
        from grading.ingest.demo import make_group
        from grading.search import index as search_index

        demo_rng = random.Random(5)
        batches = {label: [(n, line(make_group(demo_rng, run=f"ingest-{label}", step=0, task_number=n, n_rollouts=GROUP_SIZE,
                                               pass_rate=0.5, turns=(4, 12)))) for n in range(1, INGEST_GROUPS + 1)]
                   for label in ("with", "without")}
        rates = {}
        for label in ("without", "with"):
            service.index_rollouts = search_index.index_rollouts if label == "with" else (lambda items: None)
            t0 = time.perf_counter()
            report = service.ingest_group_lines(project=project, lines=batches[label])
            took = time.perf_counter() - t0
            assert report.rollouts_created == INGEST_GROUPS * GROUP_SIZE and not report.errors, report.as_dict()["errors"][:3]
            rates[label] = report.rollouts_created / took
        service.index_rollouts = search_index.index_rollouts
        print(f"ingest:    {INGEST_GROUPS * GROUP_SIZE:,} demo rollouts ({INGEST_GROUPS} groups, turns and patches) through "
              f"ingest_group_lines: {rates['with']:,.0f} rollouts/s with the search index, {rates['without']:,.0f}/s without; "
              f"ratio {rates['with'] / rates['without']:.2f}x")
        # What a search row of a rollout with real-length text stores, against its bodies (as stored:
        # compressed and TOASTed, as PostgreSQL keeps them; the GIN entries come on top).
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT avg(length(s.text)), avg(pg_column_size(s.text)), avg(pg_column_size(s.vector)), "
                "avg(pg_column_size(c.messages) + pg_column_size(c.patch) + pg_column_size(c.tests) "
                "+ pg_column_size(c.test_log) + pg_column_size(c.metadata)) "
                "FROM grading_rolloutsearch s JOIN grading_rolloutcontent c ON c.rollout_id = s.rollout_id "
                "JOIN grading_run r ON r.id = s.run_id WHERE r.name = 'ingest-with'")
            chars, text_b, vector_b, body_b = (float(v) for v in cursor.fetchone())
        print(f"row size:  a demo rollout's search row holds {chars:,.0f} characters: text {text_b:,.0f} B and vector "
              f"{vector_b:,.0f} B as stored, {(text_b + vector_b) / body_b:.0%} of its bodies ({body_b:,.0f} B)")
        worst = max(p95 for _, p95 in results)
        print(f"goal p95 <= 300 ms: {'met' if worst <= 300 else 'NOT met'} (worst p95 {worst:.0f} ms); load average {load_average():.2f} at end; "
              f"{time.perf_counter() - started:.0f} s in all")
        connection.close()
    finally:
        if not args.keep:
            recreate_database(admin_url, args.database, drop_only=True)


if __name__ == "__main__":
    main()
