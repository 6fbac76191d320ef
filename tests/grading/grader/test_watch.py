"""Waiting for a step under ASGI (grading/waits/watch.py through GET /api/v1/advantages/?wait=).

Django's AsyncClient makes ASGI requests, so these waits are awaits on the event loop's one
step watcher, as in the waits process (docker/start.sh waits), not polls in a thread. The
database is committed (transactional_db): the watcher reads from a thread of its own.

tess holds a trainer token of acme; alice (admin) posts the steps.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta

import pytest
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.db import connection, connections
from django.test import AsyncClient
from django.utils import timezone

from grading.models import Group, Step, StepWaiter
from grading.waits.watch import StepWatcher
from tests.helpers.groups import small_group
from tests.helpers.ingest import post_groups

WAIT = "/api/v1/advantages/?project=acme&run=rl&step={step}&wait={wait}"


async def asgi_get(path: str, token: str):
    """A GET as Django's ASGI handler serves it: in a thread-sensitive context of its own, so the
    request's sync code has a thread of its own (AsyncClient alone would share one among all)."""
    async with ThreadSensitiveContext():
        try:
            return await AsyncClient().get(path, headers={"Authorization": f"Bearer {token}"})
        finally:  # the thread ends with the context: its connection is closed, as the waits process's are
            await asyncio.shield(sync_to_async(connections.close_all)())


def run(scenario):
    """asyncio.run(scenario()), then the connection its ORM calls opened (on asgiref's one
    thread for sync code outside any request) is closed."""

    async def main():
        try:
            return await scenario()
        finally:
            await sync_to_async(connections.close_all)()

    return asyncio.run(main())


async def until_waiting(n: int, requests: list[asyncio.Task]) -> None:
    """Until n waiter slots are taken (each a StepWaiter row). A request that ends first fails
    the test with its answer, at once; the bound (two minutes: a loaded machine's first request
    imports the whole API) only keeps a broken view from hanging the suite."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if await StepWaiter.objects.acount() >= n:
            return
        if ended := [r for r in requests if r.done()]:
            answer = ended[0].result()
            pytest.fail(f"a wait ended before {n} were waiting: {answer.status_code} {answer.content[:500]!r}")
        await asyncio.sleep(0.02)
    pytest.fail(f"never {n} waiting")


@pytest.fixture
def two_pending_steps(transactional_db, client, alice_token):
    """Steps 1 and 2 of run rl, each with one mixed group no grader will grade: pending until their deadline."""
    post_groups(client, alice_token, small_group("t-1@1", run="rl", step=1), small_group("t-1@2", run="rl", step=2))


def test_waiters_on_a_step_are_answered_when_it_turns_final_and_others_at_their_time(two_pending_steps, trainer_token):
    if connection.vendor != "postgresql":  # four requests' threads and the watcher's at once
        pytest.skip("SQLite's in-memory test database locks tables across threads; PostgreSQL (DATABASE_URL) runs it, as CI")

    async def scenario():
        waiting = [asyncio.create_task(asgi_get(WAIT.format(step=1, wait=60), trainer_token)) for _ in range(3)]
        waiting.append(asyncio.create_task(asgi_get(WAIT.format(step=2, wait=1), trainer_token)))
        await until_waiting(4, waiting)
        # Step 1's deadline passes: it is final at the watcher's next round.
        await Group.objects.filter(step__number=1).aupdate(created_at=timezone.now() - timedelta(days=1))
        return await asyncio.wait_for(asyncio.gather(*waiting), timeout=30)

    *step1, step2 = run(scenario)
    assert [(r.status_code, r["Gagar-Step-Final"]) for r in step1] == [(200, "true")] * 3
    assert (step2.status_code, step2["Gagar-Step-Final"]) == (200, "false")  # its second passed first
    assert step1[0]["Gagar-Inputs-Version"] == str(Step.objects.get(number=1).inputs_version)
    assert len(step1[0].content.splitlines()) == 3  # the group's three rollouts
    assert StepWaiter.objects.count() == 0  # every slot given back


def test_a_waiter_that_goes_away_gives_its_slot_back(two_pending_steps, trainer_token):
    async def scenario():
        waiter = asyncio.create_task(asgi_get(WAIT.format(step=1, wait=60), trainer_token))
        await until_waiting(1, [waiter])
        waiter.cancel()  # the trainer hung up: Django cancels the view
        with pytest.raises(asyncio.CancelledError):
            await waiter
        for _ in range(500):
            if await StepWaiter.objects.acount() == 0:
                return True
            await asyncio.sleep(0.02)
        return False

    assert run(scenario)


def test_a_trainer_that_hangs_up_while_its_slot_is_being_taken_leaves_none_taken(two_pending_steps, trainer_token, monkeypatch):
    """The hang-up lands while the view's thread is still taking the slot (the row is written,
    the view has not returned): the thread finishes anyway, and the slot it took is given back
    at once rather than staying taken until it expires. Deterministic: the view is held until
    the cancel was delivered."""
    from grading.api import advantages

    taken, release = threading.Event(), threading.Event()
    real = advantages.take_waiter_slot

    def held(**kwargs):
        slot = real(**kwargs)
        taken.set()
        assert release.wait(30), "the test never let the view go on"
        return slot

    monkeypatch.setattr(advantages, "take_waiter_slot", held)

    async def scenario():
        waiter = asyncio.create_task(asgi_get(WAIT.format(step=1, wait=60), trainer_token))
        try:
            # the slot is taken and the view's thread is held before it returns
            assert await asyncio.to_thread(taken.wait, 30), "the view never took a slot"
            waiter.cancel()
            await asyncio.sleep(0)  # the cancel reaches the view, which still waits on its thread
        finally:
            release.set()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        return await StepWaiter.objects.acount()

    assert run(scenario) == 0


def test_one_round_asks_once_per_watched_step_however_many_wait(two_pending_steps, monkeypatch):
    """Fifty waiters on two steps: each round of the watcher polls the two steps, not fifty."""
    from grading.waits import watch

    rounds: list[list[int]] = []
    real = watch.poll_round
    monkeypatch.setattr(watch, "poll_round", lambda ids: rounds.append(sorted(ids)) or real(ids))
    steps = sorted(Step.objects.values_list("pk", flat=True))

    async def scenario():
        watcher = StepWatcher(poll=0.05)
        await asyncio.gather(*(watcher.until_final(steps[i % 2], seconds=0.3) for i in range(50)))

    asyncio.run(scenario())
    assert rounds and all(ids == steps for ids in rounds)
    assert len(rounds) < 50  # rounds every 0.05 s over 0.3 s, not one per waiter


@pytest.mark.django_db
def test_after_a_wait_an_unknown_inputs_version_is_a_json_404(client, alice_token, trainer_token):
    """Served after the wait (here under WSGI, Django's test client): the same JSON error as without one."""
    post_groups(client, alice_token, small_group("t-1@1", run="rl", step=1))
    r = client.get(
        "/api/v1/advantages/?project=acme&run=rl&step=1&wait=1&inputs_version=999", HTTP_AUTHORIZATION=f"Bearer {trainer_token}"
    )
    assert r.status_code == 404 and r["Content-Type"] == "application/json"
    assert "never served at inputs_version 999" in r.json()["detail"] and r.json()["field"] == "inputs_version"
    assert StepWaiter.objects.count() == 0
