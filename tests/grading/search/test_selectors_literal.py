"""Literal search is exact over whole rollouts: the rollouts a literal query returns are exactly
those with a field that holds it, case for case, however deep in a long rollout it lies.

The reference is a brute-force scan written here: a rollout holds a literal when one of its
fields (`rollout_fields`: each turn's message content, action or command, tool-call
arguments and observation, the patch's file paths and changed lines, the test ids) contains
it as a plain, case-sensitive substring. Only the field extractors are the product's
(grading.rollouts.turns.to_turn, grading.search.text.patch_parts and test_names); what the
search returns is read page by page through `search_rollouts` until there is no next cursor.

- the real corpus: the 64 vendored mini-swe-agent trajectories (tests/helpers/real_groups.py
  `load_real_long_groups`: 16 groups of 4, 33-157 kB of message text a rollout). Every
  command a rollout ran finds it, including commands first run past its 100,000th
  character, and literal probes drawn from the data (common commands, rare strings, strings
  deep inside long outputs, across newlines, with `%`, `_`, quotes and backslashes) return
  exactly the brute-force set;
- random texts (hypothesis): substrings of them, of any length from 1, and strings that are
  not in them return exactly the brute-force set.

Runs on SQLite (the default) and on PostgreSQL (DATABASE_URL=postgres://...).
"""

from __future__ import annotations

import random
import uuid
from collections import defaultdict
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grading.models import Project, RolloutContent
from grading.rollouts.turns import to_turn
from grading.search.query import MAX_QUERY_CHARS, parse_query
from grading.search.selectors import SearchScope, search_rollouts
from grading.search.text import patch_parts
from grading.search.text import test_names as names_of_tests  # not `test_*` here: pytest would collect it
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import load_real_groups, load_real_long_groups, real_groups
from tests.helpers.vendored import MINI_SWE_AGENT

pytestmark = pytest.mark.django_db

DEEP = 100_000  # characters into a rollout's text (`rollout_text`) that count as deep
# Commands searched in test (a): a literal of 1-2 characters (`ls`) is served by a bounded scan
# and holds nearly every rollout, so it says nothing here; one longer than the query limit
# (MAX_QUERY_CHARS: 128 commands of the real data, heredocs that write whole files) cannot be
# searched at all. Both are skipped.
MIN_COMMAND_CHARS = 3
MAX_PAGES = 1_000  # more pages than this for one query is a cursor that does not advance


# --- the brute force ----------------------------------------------------------------------------


def rollout_fields(messages, patch: str, tests) -> list[str]:
    """Every non-empty field a literal search looks in, in the rollout's order: each turn's
    message content, action (the command), tool-call arguments and observation, then the
    patch's file paths and changed lines, then the test ids."""
    out: list[str] = []
    for position, message in enumerate(messages if isinstance(messages, list) else []):
        if isinstance(message, dict):
            turn = to_turn(position, message)
            out += [turn.text, turn.action, *(call["arguments"] for call in turn.tool_calls), turn.observation]
    out += [part.text for part in patch_parts(patch)]
    out += names_of_tests(tests)
    return [text for text in out if text]


def thoughts(messages) -> list[str]:
    """The turns' thoughts (a model's reasoning): shown on the page, but not among the fields
    above, so test (b) leaves out a probe whose answer would depend on them."""
    return [t for t in (to_turn(p, m).thought for p, m in enumerate(messages) if isinstance(m, dict)) if t]


def brute_force(fields: dict[int, list[str]], literal: str) -> set[int]:
    """The rollouts (ids) with a field that contains `literal`, case-sensitively."""
    return {pk for pk, texts in fields.items() if any(literal in text for text in texts)}


def literal_search(project, literal: str) -> set[int]:
    """The ids of every rollout `search_rollouts` returns for `literal`, all pages."""
    query = parse_query(literal, mode="literal")
    found: set[int] = set()
    after = None
    for _ in range(MAX_PAGES):
        page = search_rollouts(query=query, scope=SearchScope(project=project), sees_grader=True, after=after)
        found |= {result.rollout.pk for result in page.results}
        if page.next_cursor is None:
            return found
        assert page.next_cursor != after, f"the cursor does not advance for {literal!r}"
        after = page.next_cursor
    raise AssertionError(f"more than {MAX_PAGES} pages for {literal!r}")


def mismatches(project, fields: dict[int, list[str]], literals) -> dict[str, tuple[set[int], set[int]]]:
    """{literal: (rollouts missed, rollouts returned that do not hold it)} where the search and the brute force differ."""
    out = {}
    for literal in literals:
        expected, got = brute_force(fields, literal), literal_search(project, literal)
        if got != expected:
            out[literal] = (expected - got, got - expected)
    return out


def shown(found: dict[str, tuple[set[int], set[int]]], total: int, n: int = 8) -> str:
    sample = "\n".join(
        f"  {lit[:80]!r}: {len(missed)} missed, {len(extra)} extra" for lit, (missed, extra) in list(found.items())[:n]
    )
    return f"{len(found)} of {total} literals differ from the brute force, e.g.\n{sample}"


# --- the real corpus ----------------------------------------------------------------------------


@dataclass(repr=False)  # a failure shows the project, not 6 MB of fields
class Corpus:
    project: Project
    fields: dict[int, list[str]]  # rollout id -> its fields (rollout_fields)
    commands: dict[int, list[str]]  # rollout id -> the commands it ran, in turn order
    text: dict[int, str]  # rollout id -> its fields joined by newlines: where "the 100,000th character" is
    thoughts: dict[int, list[str]]

    def __repr__(self) -> str:
        return f"<Corpus of {len(self.fields)} rollouts in {self.project.name}>"


def stored_corpus(project) -> Corpus:
    """The project's rollouts as stored (RolloutContent), read back for the brute force."""
    corpus = Corpus(project, {}, {}, {}, {})
    for content in RolloutContent.objects.filter(rollout__group__run__project=project).order_by("rollout_id"):
        pk, messages = content.rollout_id, content.messages
        corpus.fields[pk] = rollout_fields(messages, content.patch, content.tests)
        corpus.commands[pk] = [a for a in (to_turn(p, m).action for p, m in enumerate(messages) if isinstance(m, dict)) if a]
        corpus.text[pk] = "\n".join(corpus.fields[pk])
        corpus.thoughts[pk] = thoughts(messages)
    return corpus


@pytest.fixture
def real(acme) -> Corpus:
    groups = load_real_long_groups()
    assert len(groups) == 16 and all(len(g["rollouts"]) == 4 for g in groups)
    ingest_groups(acme, *groups)
    corpus = stored_corpus(acme)
    assert len(corpus.fields) == 64
    return corpus


def searchable_commands(corpus: Corpus) -> dict[str, set[int]]:
    """{command: the rollouts that ran it}, for commands of MIN_COMMAND_CHARS..MAX_QUERY_CHARS characters."""
    ran: dict[str, set[int]] = defaultdict(set)
    for pk, commands in corpus.commands.items():
        for command in commands:
            if MIN_COMMAND_CHARS <= len(command) <= MAX_QUERY_CHARS:
                ran[command].add(pk)
    return ran


def deep_commands(corpus: Corpus) -> dict[tuple[int, str], int]:
    """{(rollout, command): where in the rollout's text it first occurs}, for searchable
    commands that occur nowhere in the rollout's first DEEP characters."""
    deep = {}
    for command, pks in searchable_commands(corpus).items():
        for pk in pks:
            at = corpus.text[pk].find(command)
            assert at >= 0  # a command is in its own message's content (mini-swe-agent-1) and in its action
            if at >= DEEP:
                deep[(pk, command)] = at
    return deep


def test_the_long_groups_hold_all_64_real_trajectories_and_the_first_16_as_load_real_groups_reads_them():
    assert load_real_groups() == real_groups(MINI_SWE_AGENT) and len(load_real_groups()) == 16
    groups = load_real_long_groups()
    refs = [r["source"]["ref"] for g in groups for r in g["rollouts"]]
    assert len(refs) == len(set(refs)) == 64
    assert sum(r["reward"] for g in groups for r in g["rollouts"]) == 32  # 8 + 24 resolved
    assert len({g["uid"] for g in groups}) == 16 and not {g["uid"] for g in groups} & {g["uid"] for g in load_real_groups()}
    assert all([r["index"] for r in g["rollouts"]] == [0, 1, 2, 3] for g in groups)


@pytest.mark.slow
def test_every_command_a_real_rollout_ran_finds_that_rollout(real):
    ran = searchable_commands(real)
    assert len(ran) > 1_900 and all(real.commands[pk] for pk in real.fields)  # ~2,500 commands, 1,973 distinct
    missed = {}
    for command, pks in ran.items():
        lost = pks - literal_search(real.project, command)
        if lost:
            missed[command] = lost
    sample = "\n".join(
        f"  {c[:80]!r} (not found in {len(pks)} of the rollouts that ran it)" for c, pks in list(missed.items())[:8]
    )
    if missed:
        pytest.fail(f"{len(missed)} of {len(ran)} commands do not find every rollout that ran them, e.g.\n{sample}")


@pytest.mark.slow
def test_a_command_first_run_past_the_100000th_character_finds_its_rollout(real):
    deep = deep_commands(real)
    # The long trajectories have such commands (240 rollout-command pairs, the deepest at 168,756); without one
    # this test would test nothing.
    assert deep, f"no command first occurs past character {DEEP:,} of its rollout"
    assert max(deep.values()) > 150_000
    missed = sorted((at, command) for (pk, command), at in deep.items() if pk not in literal_search(real.project, command))
    if missed:
        pytest.fail(
            f"{len(missed)} of {len(deep)} commands first run past character {DEEP:,} do not find their rollout, "
            f"e.g. {[(at, c[:60]) for at, c in missed[:5]]}"
        )


# Probes anyone might type; their brute-force sets range from every rollout to none.
TYPED_PROBES = [
    "git diff",
    "sed -i",
    "python -c",
    "find . -name",
    "rm -rf",
    "git log",
    "cat setup.py",
    "grep -rn",
    "ls -la",
    "python3 reproduce_issue.py",
    "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    "Traceback (most recent call last)",
    "def __init__(self",
    "__init__.py",
    "    return ",
    "self._",
    "'%s'",
    "%(",
    "100%",
    "_meta",
    "\\n",
    "\\\\",
    "'''",
    '"""',
    "\"'",
    "print('",
    'print("',
    "r'\\",
    "== '",
    ': "',
    "GIT DIFF",
    "Git diff",
    "TRACEBACK",
    "tests/",
    "\n\n```bash\n",
    "<returncode>0</returncode>",
    "<returncode>1</returncode>",
    "no such probe anywhere, surely",
]


def _window(text: str, at: int, size: int) -> str:
    start = max(0, min(at, len(text) - size))
    return text[start : start + size]


def data_probes(corpus: Corpus, seed: int = 20251118) -> list[str]:
    """Literals drawn from the real fields with a fixed seed: windows at random offsets of the
    fields past DEEP (mostly long outputs), windows across a newline there, windows around
    `%`, `_`, quotes and backslashes, and each deep window case-swapped (mostly in no rollout)."""
    rng = random.Random(seed)
    deep_fields: list[str] = []  # the part of each field past the rollout's DEEP-th character
    for _pk, fields in corpus.fields.items():
        at = 0
        for text in fields:
            if at + len(text) > DEEP and len(text) >= 200:
                deep_fields.append(text[max(0, DEEP - at) :])
            at += len(text) + 1
    assert len(deep_fields) > 20
    probes: list[str] = []
    for text in rng.sample(deep_fields, 24):
        probes.append(_window(text, rng.randrange(len(text)), rng.randint(8, 60)))
    for text in rng.sample(deep_fields, 24):
        newlines = [i for i, ch in enumerate(text) if ch == "\n" and 0 < i < len(text) - 1]
        if newlines:
            at = rng.choice(newlines)
            probes.append(text[max(0, at - rng.randint(3, 25)) : at + rng.randint(3, 25)])
    for ch in "%_'\"\\":
        holders = [t for t in deep_fields if ch in t]
        for text in rng.sample(holders, min(4, len(holders))):
            at = rng.choice([i for i, c in enumerate(text) if c == ch])
            probes.append(text[max(0, at - rng.randint(2, 15)) : at + rng.randint(2, 15)])
    probes += [p.swapcase() for p in probes[:24]]
    return probes


@pytest.mark.slow
def test_literal_probes_from_the_real_data_return_exactly_the_rollouts_that_hold_them(real):
    probes = list(
        dict.fromkeys(p for p in TYPED_PROBES + data_probes(real) if p.strip() and MIN_COMMAND_CHARS <= len(p) <= MAX_QUERY_CHARS)
    )
    # Thoughts are not among the fields (rollout_fields): a probe whose answer changes with them says
    # nothing about the fields and is left out (in this data, none or nearly none is).
    with_thoughts = {pk: real.fields[pk] + real.thoughts[pk] for pk in real.fields}
    probes = [p for p in probes if brute_force(real.fields, p) == brute_force(with_thoughts, p)]
    sizes = [len(brute_force(real.fields, p)) for p in probes]
    # Not a trivial set: probes in no rollout, in exactly one, in some and in every one of them, and
    # probes every one of whose occurrences lies past DEEP (where only a whole-rollout search finds them).
    assert len(probes) > 100 and 0 in sizes and 1 in sizes and 64 in sizes and sum(1 < n < 64 for n in sizes) > 10
    only_deep = [
        p
        for p in probes
        if brute_force(real.fields, p) and all(real.text[pk].find(p) >= DEEP for pk in brute_force(real.fields, p))
    ]
    assert len(only_deep) > 10, only_deep
    found = mismatches(real.project, real.fields, probes)
    if found:
        pytest.fail(shown(found, len(probes)))


# --- random texts --------------------------------------------------------------------------------

# Printable text, any script, with newlines and the characters a LIKE pattern or a quoting bug
# would trip on. No control characters but newline and tab (NUL cannot be stored at all).
CHARACTERS = st.one_of(
    st.sampled_from(list("%_\\'\"\n\t -=.aAzZ0")),
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")),
)
TEXT = st.text(CHARACTERS, min_size=1, max_size=40)


def random_rollout(index: int, texts: list[str]) -> dict:
    """A rollout whose message content, action, observation, tool-call arguments, patch path
    and lines and test id are `texts` (cycled)."""
    t = [texts[i % len(texts)] for i in range(8)]
    one_line = [x.replace("\n", " ") for x in t]  # a patch line is one line (patch_parts splits on the rest itself)
    return {
        "index": index,
        "reward": index % 2,
        "patch": f"diff --git a/p.py b/p.py\n--- a/p.py\n+++ b/{one_line[4]}\n@@ -1,1 +1,1 @@\n-{one_line[5]}\n+{one_line[6]}\n",
        "messages": [
            {"role": "user", "content": t[0]},
            {
                "role": "assistant",
                "content": t[1],
                "action": t[2],
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": t[3]}}],
            },
            {"role": "tool", "content": "", "observation": t[7]},
        ],
        "tests": {"FAIL_TO_PASS": {"success": [t[5]], "failure": []}},
        "source": {"format": "test", "ref": f"random/{index}"},
    }


@st.composite
def texts_and_literals(draw):
    rollouts = draw(st.lists(st.lists(TEXT, min_size=1, max_size=8), min_size=1, max_size=4))
    fields = [rollout_fields(r["messages"], r["patch"], r["tests"]) for r in map(random_rollout, range(len(rollouts)), rollouts)]
    everything = [text for texts in fields for text in texts]
    literals = []
    for _ in range(draw(st.integers(2, 6))):  # substrings of a field, from 1 character
        text = draw(st.sampled_from(everything))
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, len(text)))
        literals.append(text[start:end])
    literals.append(literals[0].swapcase())  # the same letters in the other case: usually in no field
    if len(everything) > 1:  # across two fields (one's end, a newline, the next one's start): usually in no field
        i = draw(st.integers(0, len(everything) - 2))
        literals.append(everything[i][-draw(st.integers(1, 5)) :] + "\n" + everything[i + 1][: draw(st.integers(1, 5))])
    literals += draw(st.lists(TEXT, min_size=1, max_size=3))  # random strings: usually in no field
    # A literal may not be blank (the query would be empty) or longer than the query limit.
    return rollouts, [lit for lit in dict.fromkeys(literals) if lit.strip() and len(lit) <= MAX_QUERY_CHARS]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(texts_and_literals())
def test_random_texts_literal_search_equals_the_brute_force(db, case):
    rollouts, literals = case
    # A fresh project per example: a search's scope is its project, so earlier examples' rows (kept
    # until the test's transaction is rolled back) are never among the results.
    project = Project.objects.create(name=f"random-{uuid.uuid4().hex[:12]}")
    group = {
        "format": "gagar-group/1",
        "run": "random",
        "step": 1,
        "uid": "random@1",
        "task": {"instance_id": "random"},
        "rollouts": [random_rollout(i, texts) for i, texts in enumerate(rollouts)],
    }
    ingest_groups(project, group)
    corpus = stored_corpus(project)
    assert sorted(map(sorted, corpus.fields.values())) == sorted(
        sorted(rollout_fields(r["messages"], r["patch"], r["tests"])) for r in group["rollouts"]
    )  # stored as sent
    found = mismatches(project, corpus.fields, literals)
    assert not found, shown(found, len(literals))  # an assert, not pytest.fail: hypothesis shrinks it
