"""The LLM grader, a campaign and an LLM scanner against a real model server: llama.cpp's
llama-server with SmolLM2-135M-Instruct (tests/helpers/llama_server.py; `make test-llm`).

The model cannot judge code. It is here for what a real server does that our scripted one
does not: chat templates, its own tool-call parser, grammars from JSON schemas, replies cut at
a length limit, a context a conversation outgrows, error statuses, and a process that can stop
answering. Every malformed answer
below comes from the server itself, steered by a grammar (JSON mode) or by a last instruction
its chat template adds (`gagar_say`, native tool calls). Sampling is at temperature 0, and the
tests assert what the desk records (verdict status, the conversation, usage, the group's
fallback, the job's end), never the model's words.
"""

from __future__ import annotations

import json

import orjson
import pytest
from django.test import override_settings

import grading.grader.llm as llm_module
from grading.jobs.campaigns import Scope, start_campaign
from grading.jobs.grade import grade_group
from grading.models import Campaign, GradingJob, Group, Verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.llama_server import LlamaServer
from tests.helpers.real_groups import load_real_groups, multi_model_group

pytestmark = [pytest.mark.llm, pytest.mark.django_db(transaction=True)]

COLD = {"temperature": 0, "seed": 7}


def say(text: str) -> dict:
    """Request fields that make the model reply with `text` (a last instruction from the template)."""
    return {**COLD, "chat_template_kwargs": {"gagar_say": text}}


def grammar(*alternatives: str) -> str:
    """A GBNF grammar whose root is exactly one of `alternatives` (JSON strings quoted for GBNF)."""
    return "root ::= " + " | ".join(json.dumps(a) for a in alternatives)


def call_text(tool: str, arguments: dict | None = None) -> str:
    return json.dumps({"tool": tool, "arguments": arguments or {}})


def graded(acme, group_doc, grader: str) -> Verdict:
    ingest_groups(acme, group_doc)
    group = Group.objects.get(uid=group_doc["uid"])
    return grade_group(group_id=group.pk, backend=grader)


def errors_of(verdict: Verdict) -> str:
    return "; ".join(verdict.errors)


def advantage_rows(client, token: str, run: str = "r1", step: int = 1) -> list[dict]:
    r = client.get(f"/api/v1/advantages/?project=acme&run={run}&step={step}&format=jsonl", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert r.status_code == 200, r.content
    return [orjson.loads(line) for line in r.content.splitlines() if line.strip()]


def assert_kept_and_fell_back(verdict: Verdict, client, token: str, *, status: str, turns: int | None = None) -> None:
    """What every failed conversation must leave: its verdict with the conversation and usage,
    the job ended (not lost), and the group falling back to the baseline in the export."""
    assert verdict.status == status, (verdict.status, verdict.errors, verdict.raw.get("transcript"))
    transcript = verdict.raw["transcript"]
    if turns is not None:
        assert len(transcript) == turns, transcript
    assert verdict.raw["usage"]["api_calls"] >= len(transcript)
    job = GradingJob.objects.get(group=verdict.group, grader=verdict.grader)
    # ended, failed (its verdict is not valid), and not to be tried again: the verdict is the answer
    assert (job.status, job.verdict_id) == (GradingJob.Status.FAILED, verdict.pk) and job.finished_at is not None
    rows = [row for row in advantage_rows(client, token) if row["uid"] == verdict.group.uid]
    assert rows and {row["status"] for row in rows} == {"fallback"}
    assert [row["redistributed_advantage"] for row in rows] == [row["advantage"] for row in rows]


# --- whole conversations, as a team would run the grader --------------------------------------


def test_native_tool_calls_on_a_real_group_end_in_a_recorded_verdict(smol, acme, client, trainer_token):
    """The grader's own prompt, unsteered, on a group of real trajectories: whatever the model
    does (SmolLM2 calls no tool), the verdict is recorded with the whole conversation."""
    grader = smol(request={**COLD, "max_tokens": 48})
    verdict = graded(acme, multi_model_group("g1@1", size=4), grader)

    assert verdict.grader == grader and verdict.raw["usage"]["prompt_tokens"] > 2_000  # the system prompt and tools
    if verdict.status != Verdict.Status.VALID:
        assert_kept_and_fell_back(verdict, client, trainer_token, status=verdict.status, turns=3)
        assert verdict.status == Verdict.Status.TIMEOUT and "turn budget exhausted" in errors_of(verdict)
        assert all(turn["text"] or turn["calls"] for turn in verdict.raw["transcript"])


def test_json_mode_replies_are_calls_under_the_servers_grammar(smol, acme, client, trainer_token):
    """JSON mode: the schema in response_format becomes the server's grammar, so every reply the
    real model gives is a call of an offered tool with arguments of the right shape."""
    grader = smol(tool_mode="json", request={**COLD, "max_tokens": 160}, max_turns=4)
    verdict = graded(acme, small_group("g1@1", rewards=(1, 0, 1)), grader)

    transcript = verdict.raw["transcript"]
    made = [call["name"] for turn in transcript for call in turn["calls"]]
    assert made, transcript
    complete = [turn for turn in transcript if not turn.get("truncated")]
    assert all(len(turn["calls"]) == 1 and "error" not in turn for turn in complete), transcript
    if verdict.status != Verdict.Status.VALID:
        assert_kept_and_fell_back(verdict, client, trainer_token, status=verdict.status)


# --- each malformed answer a real server gives ------------------------------------------------

MALFORMED = {
    # kind: (tool mode, request fields, status, what the first turn of the transcript shows)
    "bad JSON arguments (a native call cut by max_tokens)": (
        "tools",
        {**say('<tool_call>\n{"name": "read_patch", "arguments": {"rollout": 0}}\n</tool_call>'), "max_tokens": 20},
        "timeout",
        lambda turn: turn["truncated"] and "not valid JSON" in turn["calls"][0]["error"],
    ),
    "unknown tool": (
        "json",
        {**COLD, "grammar": grammar(call_text("drop_database"))},
        "timeout",
        lambda turn: "unknown tool 'drop_database'" in turn["calls"][0]["error"],
    ),
    "no call at all": (
        "json",
        {**COLD, "grammar": grammar("All three rollouts look fine to me.")},
        "timeout",
        lambda turn: turn["calls"] == [] and "error" not in turn,
    ),
    "empty reply": (
        "json",
        {**COLD, "grammar": 'root ::= ""'},
        "timeout",
        lambda turn: turn["calls"] == [] and turn["text"] == "",
    ),
    "truncated output": (
        "json",
        {
            **COLD,
            "grammar": 'root ::= "{\\"tool\\": \\"read_turns\\", \\"arguments\\": {\\"note\\": \\"" [a-z ]+',
            "max_tokens": 16,
        },
        "timeout",
        lambda turn: turn["truncated"] and "not valid JSON" in turn["error"],
    ),
    "repeated identical calls": (
        "json",
        {**COLD, "grammar": grammar(call_text("list_rollouts"))},
        "timeout",
        lambda turn: turn["calls"][0]["name"] == "list_rollouts" and "error" not in turn["calls"][0],
    ),
    "a verdict rejected twice": (
        "json",
        {**COLD, "grammar": grammar(call_text("submit_verdict", {"judgments": []}))},
        "invalid",
        lambda turn: turn["calls"] == [{"name": "submit_verdict", "accepted": False, "errors": 1}],
    ),
}


@pytest.mark.parametrize("kind", list(MALFORMED))
def test_a_malformed_answer_from_the_real_server_ends_as_a_recorded_verdict(kind, smol, acme, client, trainer_token):
    tool_mode, request, status, first_turn_shows = MALFORMED[kind]
    grader = smol(tool_mode=tool_mode, request=request)
    verdict = graded(acme, small_group("g1@1", rewards=(1, 0, 1)), grader)

    assert_kept_and_fell_back(verdict, client, trainer_token, status=status, turns=2 if status == "invalid" else 3)
    transcript = verdict.raw["transcript"]
    assert first_turn_shows(transcript[0]), transcript
    if kind == "repeated identical calls":
        assert [c.get("repeated", False) for turn in transcript for c in turn["calls"]] == [False, True, True]
    if status == "timeout":
        assert "turn budget exhausted" in errors_of(verdict)


def test_a_request_the_server_refuses_is_an_invalid_verdict(smol, acme, client, trainer_token):
    """The server's own error status (a grammar it cannot parse): no retry, recorded, fallen back."""
    grader = smol(tool_mode="json", request={**COLD, "grammar": "root ::= ( unclosed"})
    verdict = graded(acme, small_group("g1@1", rewards=(1, 0, 1)), grader)

    assert_kept_and_fell_back(verdict, client, trainer_token, status="invalid", turns=0)
    assert "the model server answered 4" in errors_of(verdict) or "the model server answered 5" in errors_of(verdict)
    assert verdict.raw["usage"]["api_calls"] == 1


@pytest.mark.parametrize("how", ["stops answering", "goes away"])
def test_the_server_failing_mid_group_ends_as_a_timeout_verdict(how, llama, smol, acme, client, trainer_token, monkeypatch):
    """After the first tool call the server process is stopped (SIGSTOP: requests hang until the
    client's timeout) or killed (connections refused); the grader's retries give up, the verdict
    is a timeout with the first turn kept, and the server is brought back for the next test."""
    request = {**COLD, "grammar": grammar(call_text("list_rollouts"))}
    doc = small_group("g1@1", rewards=(1, 0, 1))
    # The same conversation once with time to spare: the prompt is then in the server's cache,
    # and the first call of the graded one answers well inside its short timeout.
    warm = graded(acme, doc, smol("warm", tool_mode="json", request=request, max_turns=2))
    assert warm.raw["transcript"], warm.errors
    grader = smol(tool_mode="json", request=request, timeout_s=5)
    real_call_tool = llm_module.call_tool

    def fail_after_first_tool(workspace, name, arguments):
        (llama.pause if how == "stops answering" else llama.kill)()
        return real_call_tool(workspace, name, arguments)

    monkeypatch.setattr(llm_module, "call_tool", fail_after_first_tool)
    try:
        verdict = grade_group(group_id=warm.group_id, backend=grader)
    finally:
        if how == "stops answering":
            llama.resume()
        else:
            llama.start()

    assert_kept_and_fell_back(verdict, client, trainer_token, status="timeout", turns=1)
    expected = "did not answer in time" if how == "stops answering" else "could not reach the model server"
    assert expected in errors_of(verdict)
    # the first call, then the second with the client's two retries (a refused connection may
    # count more attempts: the pool's stale connection fails first)
    assert verdict.raw["usage"]["api_calls"] >= 1 + 3


def test_a_conversation_that_outgrows_the_servers_context_is_an_invalid_verdict(smol, acme, client, trainer_token, monkeypatch):
    """A server of 6,144 tokens of context: the grader's first request fits, the model reads 20
    turns of a real trajectory (a grammar makes it), and the next request is over the context.
    llama-server refuses it (400, exceed_context_size_error): the verdict is invalid, its first
    turn kept, the group fallen back."""
    small = LlamaServer.from_environment(slots=1, context=6_144, max_reply=64).start()
    read = call_text("read_turns", {"rollout": 0, "start": 0, "count": 20, "max_chars": 20000})
    try:
        monkeypatch.setenv("LLAMA_URL", small.base_url)
        grader = smol("narrow", tool_mode="json", request={**COLD, "grammar": grammar(read)})
        verdict = graded(acme, multi_model_group("g1@1", size=4), grader)
    finally:
        small.stop()

    assert_kept_and_fell_back(verdict, client, trainer_token, status="invalid", turns=1)
    assert "the model server answered 400" in errors_of(verdict) and "context" in errors_of(verdict)
    assert verdict.raw["transcript"][0]["calls"][0]["name"] == "read_turns"


# --- a campaign and an LLM scanner ------------------------------------------------------------


def test_a_campaign_on_the_real_server_finishes_and_counts_what_it_spent(smol, acme):
    grader = smol(tool_mode="json", request={**COLD, "grammar": grammar(call_text("submit_verdict", {"judgments": []}))})
    ingest_groups(acme, *[small_group(f"g{i}@1", instance_id=f"t-{i}", rewards=(1, 0, 1)) for i in range(2)])
    run = Group.objects.get(uid="g0@1").run
    campaign = start_campaign(project=acme, grader=grader, scope=Scope(Campaign.Scope.RUN, run))

    campaign.refresh_from_db()
    assert (campaign.status, campaign.total, campaign.graded, campaign.failed) == ("done", 2, 0, 2), campaign.error
    assert campaign.prompt_tokens > 2 * 2_000 and campaign.completion_tokens > 0
    assert Verdict.objects.filter(grader=grader, status="invalid").count() == 2


SCANNER = {"name": "asks", "kind": "llm", "definition": {"question": "Did the agent read the tests?", "grader": "smol"}}


def scan(client, token, body, run):
    def api(path, data):
        return client.post(
            f"/api/v1/scanners/custom/{path}?project=acme",
            data=orjson.dumps(data),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )

    r = api("", body)
    assert r.status_code == 201, r.content
    r = api(f"{body['name']}/runs/", {"run": run})
    assert r.status_code in (200, 201, 202), r.content
    return r.json()["result"]


@pytest.mark.parametrize(
    ("request_fields", "outcome"),
    [
        ({**COLD, "max_tokens": 120}, None),  # the schema of the answer as the server's grammar; any answer
        ({**COLD, "grammar": grammar('{"finding": false, "detail": "no", "citations": []}')}, "clear"),
        (
            {
                **COLD,
                "grammar": grammar('{"finding": true, "detail": "it did", "citations": [{"kind": "turn", "locator": "999"}]}'),
            },
            "refused",
        ),
    ],
)
def test_an_llm_scanner_on_the_real_server(request_fields, outcome, smol, acme, client, alice_token):
    smol(tool_mode="json", request=request_fields)
    groups = load_real_groups()[:3]
    ingest_groups(acme, *groups)
    with override_settings(PROJECT_SCANNER_PROMPT_CHARS=6_000):  # a real rollout in the small model's context
        result = scan(client, alice_token, SCANNER, groups[0]["run"])

    assert result["rollouts"] == 3 and result["errors"] == 0, result
    assert result["findings"] + result["clear"] + result["refused"] == 3
    if outcome is not None:
        assert result[outcome] == 3, result
    if outcome == "refused":
        assert all(r["reason"].startswith("a citation does not resolve") for r in result["refusals"])
