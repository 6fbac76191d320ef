"""OpenRLHF (0.11): A* as the reward of `--algo.advantage.estimator dr_grpo`.

OpenRLHF has no estimator to register. Its `dr_grpo` takes each prompt's
`--rollout.n_samples_per_prompt` rewards (grouped by the sample's place in the rollout, all n of
them: OpenRLHF filters whole groups only), subtracts their mean and puts the result on every
response token, with no std and no whitening. A* sums to zero over a whole group, so that is A*.
`check_args` refuses the settings that change it, naming each: another estimator (`group_norm`
divides by the std, `rloo` is leave-one-out, `reinforce_baseline` whitens over the batch,
token-weighted), KL in the reward (`--algo.kl.init_coef` without `--algo.kl.use_loss`), the
length penalties, dynamic filtering on the scores, and a `--reward.clip_range` narrower than A*.

Rewards come from a remote reward model, `--reward.remote_url http://host:port/`: each vLLM
engine process posts every sample on its own as it finishes (`{"query", "prompts", "labels"}`,
one sample each), so neither the order of the requests nor their contents say which rollout of
its group a sample is, and a group's samples may come from different engine processes.
`GroupCollector` is where the group is made: it gives each sample of a uid (read from its label)
its index as it arrives, and when all n are in, calls `resolve(uid, rollouts)` once (post the
group to Gagar, wait, return its `{(uid, index): A*}`); every request then gets its own sample's
A*. Two samples with the same text may swap indexes, which changes nothing they train on.
`serve(collector)` answers OpenRLHF's requests, a thread per request, so waiting samples hold
no thread of OpenRLHF's::

    from gagar_client.adapters.openrlhf import GroupCollector, serve

    collector = GroupCollector(n=8, resolve=post_and_wait, uid_of=lambda label: json.loads(label)["uid"])
    serve(collector, port=5000).serve_forever()   # --reward.remote_url http://127.0.0.1:5000/

Not the `.py` reward file (`--reward.remote_url reward_func.py`): OpenRLHF calls that through
`asyncio.to_thread`, whose pool (min(32, cores + 4) threads per engine process) fills with
samples waiting for their groups and then stops (as it did here: 12 samples, 2 cores), and each
engine process would hold a collector of its own. OpenRLHF gives a request 180 s and sends it again on failure:
a sample sent again after its group was answered gets its A* again; grade within that time
(`grading_deadline_seconds` below 180, or `auto_grade`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gagar_client.adapters import MissingAdvantage, setting

__all__ = ["ESTIMATOR", "GroupCollector", "MissingAdvantage", "check_args", "serve"]

ESTIMATOR = "dr_grpo"
WHY_NOT = {
    "group_norm": "divides A* by its group's std",
    "rloo": "uses a leave-one-out baseline (scales A* by n/(n-1))",
    "reinforce_baseline": "whitens advantages over the whole batch, weighted by tokens",
    "reinforce": "whitens advantages over the whole batch, weighted by tokens",
    "gae": "adds a critic and whitens advantages over the batch",
    "flash_reinforce": "subtracts the batch's mean instead of the group's",
}


def check_args(args: Any, *, n: int | None = None) -> None:
    """Refuse OpenRLHF arguments (its parsed, nested `args`) that would change A*, naming each."""
    estimator = setting(args, "algo.advantage.estimator", "gae")
    if estimator != ESTIMATOR:
        why = WHY_NOT.get(estimator, "does not give A* back")
        raise ValueError(f"--algo.advantage.estimator {estimator} {why}: use {ESTIMATOR}")
    if not setting(args, "algo.kl.use_loss", False) and setting(args, "algo.kl.init_coef", 0.01) > 0:
        raise ValueError(
            f"--algo.kl.init_coef {setting(args, 'algo.kl.init_coef', 0.01)} without --algo.kl.use_loss "
            "adds a KL penalty to A* in the reward: pass --algo.kl.use_loss (KL in the loss) or "
            "--algo.kl.init_coef 0"
        )
    if setting(args, "reward.overlong_buffer_len") is not None:
        raise ValueError(
            "--reward.overlong_buffer_len adds DAPO's length penalty to A*: leave it unset (post an "
            "overlong rollout as dropped instead)"
        )
    if setting(args, "reward.stop_properly_penalty_coef") is not None:
        raise ValueError("--reward.stop_properly_penalty_coef rescales the A* of truncated samples: leave it unset")
    if setting(args, "algo.dynamic_filtering_enable", False):
        raise ValueError(
            "--algo.dynamic_filtering_enable filters groups by their scores; a group without signal has "
            "A* = 0 already: leave it off"
        )
    samples = setting(args, "rollout.n_samples_per_prompt", 1)
    if n is not None and samples != n:
        raise ValueError(f"--rollout.n_samples_per_prompt {samples} but the collector makes groups of {n}")


class GroupCollector:
    """OpenRLHF's `reward_func` for A*: collect a uid's n samples, resolve the group once, answer
    each call with its own sample's A*.

    `resolve(uid, rollouts)` gets `[{"index", "query", "prompt", "label"}, ...]` (index order) and
    returns `{(uid, index): A*}`; `uid_of(label)` reads the group's uid from a sample's label
    (default: the label itself). `clip_range` is OpenRLHF's `--reward.clip_range`: an A* beyond it
    is refused. A call waits at most `timeout` seconds for its group."""

    def __init__(
        self,
        n: int,
        resolve: Callable[[str, list[dict]], Mapping[tuple, float]],
        *,
        uid_of: Callable[[Any], str] = str,
        clip_range: Sequence[float] = (-10.0, 10.0),
        timeout: float = 900.0,
    ) -> None:
        if n < 2:
            raise ValueError("dr_grpo needs n_samples_per_prompt > 1")
        self.n, self.resolve, self.uid_of, self.timeout = n, resolve, uid_of, timeout
        self.clip_range = (float(clip_range[0]), float(clip_range[1]))
        self._lock = threading.Condition()
        self._arrived: dict[str, list[dict]] = {}
        self._answers: dict[str, Mapping[tuple, float] | BaseException] = {}
        self._waiting: dict[str, int] = {}
        self._done: dict[str, dict[str, float]] = {}  # the last `keep` answered groups: {query: A*}, for resends
        self.keep = 4096

    def reward_func(self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any], **kwargs: Any) -> dict:
        """OpenRLHF's signature; `{"rewards", "scores", "extra_logs"}` with one A* per query."""
        values = [self._one(query, prompt, label) for query, prompt, label in zip(queries, prompts, labels)]
        try:
            import torch
        except ImportError:  # OpenRLHF always has torch; this keeps the module importable without it
            rewards: Any = values
        else:
            rewards = torch.tensor(values, dtype=torch.float32)
        return {"rewards": rewards, "scores": rewards, "extra_logs": {}}

    def _one(self, query: str, prompt: str, label: Any) -> float:
        uid = str(self.uid_of(label))
        with self._lock:
            answered = self._done.get(uid)
            if answered is not None and query in answered:  # OpenRLHF sent the sample again
                return answered[query]
            arrived = self._arrived.setdefault(uid, [])
            if len(arrived) >= self.n:
                raise ValueError(
                    f"group {uid!r} has {self.n} samples already: is n_samples_per_prompt {self.n}, and is the uid new each step?"
                )
            index = len(arrived)
            arrived.append({"index": index, "query": query, "prompt": prompt, "label": label})
            self._waiting[uid] = self._waiting.get(uid, 0) + 1
            complete = len(arrived) == self.n
        if complete:
            try:
                answer: Mapping[tuple, float] | BaseException = dict(self.resolve(uid, list(arrived)))
            except BaseException as exc:  # noqa: BLE001  every waiter of the group gets it
                answer = exc
            with self._lock:
                self._answers[uid] = answer
                self._lock.notify_all()
        with self._lock:
            try:
                if not self._lock.wait_for(lambda: uid in self._answers, timeout=self.timeout):
                    raise TimeoutError(
                        f"group {uid!r}: {len(self._arrived.get(uid, []))} of {self.n} samples arrived in {self.timeout:g} s"
                    )
                answer = self._answers[uid]
            finally:
                self._waiting[uid] -= 1
                if not self._waiting[uid] and uid in self._answers:  # the group's last waiter clears it
                    done = self._answers.pop(uid)
                    if not isinstance(done, BaseException):
                        self._done[uid] = {
                            r["query"]: float(done[(uid, r["index"])]) for r in self._arrived[uid] if (uid, r["index"]) in done
                        }
                        while len(self._done) > self.keep:
                            self._done.pop(next(iter(self._done)))
                    del self._arrived[uid], self._waiting[uid]
        if isinstance(answer, BaseException):
            raise answer
        if (uid, index) not in answer:
            raise MissingAdvantage(f"no advantage for ({uid!r}, {index}) in the group's answer")
        value = float(answer[(uid, index)])
        low, high = self.clip_range
        if not low <= value <= high:
            raise ValueError(f"A* {value:.4f} of ({uid!r}, {index}) lies outside --reward.clip_range {low:g} {high:g}: widen it")
        return value


def serve(collector: GroupCollector, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for `--reward.remote_url`: POST `{"query": [...], "prompts": [...],
    "labels": [...]}` answers `{"rewards": [...], "scores": [...], "extra_logs": {}}` with each
    query's A*, a thread per request. Bad requests answer 400 with a JSON `detail`. Call
    `serve_forever()` on it (or run it in a thread)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            try:
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 < length <= 64 * 1024 * 1024:
                    raise ValueError("send a JSON body of at most 64 MiB")
                payload = json.loads(self.rfile.read(length))
                queries, prompts, labels = (payload.get(key) for key in ("query", "prompts", "labels"))
                if not (
                    isinstance(queries, list)
                    and isinstance(prompts, list)
                    and isinstance(labels, list)
                    and len(queries) == len(prompts) == len(labels)
                ):
                    raise ValueError("query, prompts and labels must be lists of one length")
            except ValueError as exc:
                return self._answer(400, {"detail": str(exc)})
            try:
                values = [collector._one(q, p, lab) for q, p, lab in zip(queries, prompts, labels)]
            except (ValueError, KeyError, TimeoutError) as exc:
                return self._answer(422, {"detail": str(exc)})
            self._answer(200, {"rewards": values, "scores": values, "extra_logs": {}})

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
