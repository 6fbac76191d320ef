"""HTTP client for the Gagar REST API. Standard library only.

Every call goes through `Client._request`, which:

* sends `Authorization: Bearer <token>` and asks for JSON;
* retries connection errors, read time-outs and 502/503/504 answers with exponential
  backoff (`backoff * 2**attempt`, at most `max_backoff` seconds), and 429 answers after
  the server's `Retry-After` (seconds or an HTTP date); a wait for a step turned away with
  429 (too many waiters) is retried after its Retry-After until the wait's own deadline;
* raises `GagarError` for every other non-2xx answer, with `.status`, `.detail` (the
  server's `detail`, or its whole JSON body when it has none) and `.body` (the parsed JSON
  error body, or the raw text).

Retrying a POST of groups is safe: the server stores a line it has already stored as
`unchanged` (FORMATS.md, `gagar-group/1`).
"""

from __future__ import annotations

import email.utils
import gzip as gzip_module
import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

GROUP_FORMAT = "gagar-group/1"
RETRY_STATUSES = frozenset({502, 503, 504})
MAX_WAIT = 300  # the longest `wait` the server holds a request for (seconds)
USER_AGENT = "gagar-client/0.1"


class GagarError(RuntimeError):
    """The service refused the request, or could not be reached.

    `status` is the HTTP status (None when no answer came back), `detail` the server's
    explanation (its JSON `detail`, else the whole body), `body` the parsed JSON error body
    (a dict) or the raw text.
    """

    def __init__(
        self, message: str, *, status: int | None = None, detail: Any = None, body: Any = None, method: str = "", url: str = ""
    ):
        super().__init__(message)
        self.status = status
        self.detail = detail
        self.body = body
        self.method = method
        self.url = url


class GagarConnectionError(GagarError):
    """No HTTP answer after every retry (refused, reset, DNS, time-out)."""


class StepNotFinal(GagarError, TimeoutError):
    """`wait_for_step` ran out of time; `.rows` holds the last (non-final) rows, `.status_counts` the counts."""

    def __init__(self, message: str, *, rows: Rows, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.rows = rows


class Rows(list):
    """Export rows (dicts), plus what the response said about them.

    `final`: the `Gagar-Step-Final` header (None when absent); `inputs_version`: the
    `Gagar-Inputs-Version` header, else the rows' `inputs_version` field; `headers`: all
    response headers (lower-case names).
    """

    final: bool | None = None
    inputs_version: str | None = None
    headers: dict[str, str]

    def __init__(
        self,
        rows: Iterable[dict] = (),
        *,
        final: bool | None = None,
        inputs_version: str | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        super().__init__(rows)
        self.final = final
        self.inputs_version = inputs_version
        self.headers = dict(headers or {})


class Response:
    def __init__(self, status: int, headers: Mapping[str, str], body: bytes, url: str):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.body = body
        self.url = url

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else None


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_detail(body: bytes) -> tuple[Any, Any]:
    """(detail, parsed body) of an error answer."""
    text = body.decode("utf-8", errors="replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        return (text.strip()[:2000] or None), text
    if isinstance(parsed, dict) and "detail" in parsed:
        return parsed["detail"], parsed
    return parsed, parsed


def _header_bool(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.strip().lower() in ("true", "1", "yes")


def parse_jsonl(body: bytes) -> list[dict]:
    return [json.loads(line) for line in body.decode("utf-8").splitlines() if line.strip()]


def scalar_metrics(metrics: Mapping[str, Any]) -> tuple[dict[str, float], list[str]]:
    """(name -> float) of the finite real scalars in `metrics`, and the names left out. A numpy or
    torch scalar (anything with `.item()` giving a number) counts; a bool does not."""
    numbers: dict[str, float] = {}
    skipped: list[str] = []
    for name, value in metrics.items():
        if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 0) == 0:
            try:
                value = value.item()
            except (TypeError, ValueError, RuntimeError):
                pass
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
            skipped.append(str(name))
            continue
        numbers[str(name)] = float(value)
    return numbers, skipped


class Client:
    """A trainer's connection to one project of a Gagar server.

    >>> client = Client("http://127.0.0.1:8000", "secret", project="acme")  # doctest: +SKIP
    >>> client.post_step("flash-code-rl", 28, groups)                        # doctest: +SKIP
    >>> a_star = client.advantages("flash-code-rl", 28)                       # doctest: +SKIP
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        project: str,
        timeout: float = 30,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        max_retry_after: float = 300.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not project:
            raise ValueError("project is required")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.project = project
        self.timeout = timeout
        self.retries = max(0, int(retries))
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"Client({self.base_url!r}, project={self.project!r})"

    # -- transport ---------------------------------------------------------------------

    def _url(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        query = {"project": self.project}
        for key, value in (params or {}).items():
            if value is None:
                continue
            query[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        return f"{self.base_url}{path}?{urllib.parse.urlencode(query)}"

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        patience: float | None = None,
    ) -> Response:
        """One request with retries. `patience` (a time.monotonic() deadline): 429 answers are
        retried after their Retry-After until then, however many (a waiter turned away because
        too many are waiting gets a slot once others' waits end), and count no retry."""
        url = self._url(path, params)
        all_headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json", "User-Agent": USER_AGENT}
        if json_body is not None:
            data = json.dumps(json_body, allow_nan=False).encode("utf-8")
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        attempt = 0
        while True:
            request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
            delay: float | None = None
            try:
                with urllib.request.urlopen(request, timeout=timeout or self.timeout) as answer:  # noqa: S310 (the caller chooses the server)
                    return Response(answer.status, dict(answer.headers.items()), answer.read(), url)
            except urllib.error.HTTPError as exc:
                body = exc.read() or b""
                status = exc.code
                detail, parsed = _error_detail(body)
                retriable = status in RETRY_STATUSES or status == 429
                patient = status == 429 and patience is not None
                if not retriable or (attempt >= self.retries and not patient):
                    raise GagarError(
                        f"{status} from {method} {path}: {_short(detail)}",
                        status=status,
                        detail=detail,
                        body=parsed,
                        method=method,
                        url=url,
                    ) from None
                if status == 429:
                    delay = _retry_after(exc.headers.get("Retry-After"))
                    if delay is not None:
                        delay = min(delay, self.max_retry_after)
                    if patient and patience is not None:  # `patient` already says so; this tells mypy
                        delay = delay if delay is not None else min(self.max_backoff, self.backoff * (2**attempt))
                        if time.monotonic() + delay >= patience:
                            raise GagarError(
                                f"{status} from {method} {path}: {_short(detail)} (still refused when the wait's time was up)",
                                status=status,
                                detail=detail,
                                body=parsed,
                                method=method,
                                url=url,
                            ) from None
                        self._sleep(delay)
                        continue
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                if attempt >= self.retries:
                    raise GagarConnectionError(
                        f"{method} {path}: no answer from {self.base_url} after {attempt + 1} attempt(s): {reason}",
                        method=method,
                        url=url,
                    ) from exc
            if delay is None:
                delay = min(self.max_backoff, self.backoff * (2**attempt))
            attempt += 1
            self._sleep(delay)

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(method, path, **kwargs).json()

    # -- runs --------------------------------------------------------------------------

    def create_run(
        self,
        name: str,
        *,
        baseline: str = "mean",
        auto_grade: str = "heuristic",
        grading_deadline_seconds: int = 600,
        **fields: Any,
    ) -> dict:
        """Create a run with its grading policy before any group arrives."""
        body = {
            "name": name,
            "baseline": baseline,
            "auto_grade": auto_grade,
            "grading_deadline_seconds": grading_deadline_seconds,
            **fields,
        }
        return self._json("POST", "/api/v1/runs/", json_body=body)

    def run(self, name: str) -> dict:
        return self._json("GET", f"/api/v1/runs/{_segment(name)}/")

    def update_run(self, name: str, **fields: Any) -> dict:
        if not fields:
            raise ValueError("update_run needs at least one field to change")
        return self._json("PATCH", f"/api/v1/runs/{_segment(name)}/", json_body=fields)

    def ensure_run(self, name: str, **policy: Any) -> dict:
        """The run, created with `policy` if it does not exist yet (an existing run is not changed)."""
        try:
            return self.run(name)
        except GagarError as exc:
            if exc.status != 404:
                raise
        return self.create_run(name, **policy)

    # -- steps -------------------------------------------------------------------------

    def log_metrics(self, run: str, step: int, metrics: Mapping[str, Any]) -> dict:
        """Log a step's scalars by name (entropy, response length, clip ratio, eval pass rates…),
        beside the desk's own figures on the run's timeline. Pass the dict the trainer already has
        (verl's `metrics`, TRL's `logs`): numbers are sent (numpy and torch scalars included), the
        rest (text, lists, NaN and infinities) is left out and named in the answer's `skipped`.
        Posting the same values again changes nothing; a new value replaces the old."""
        numbers, skipped = scalar_metrics(metrics)
        if not numbers:
            return {"run": run, "created": 0, "changed": 0, "unchanged": 0, "skipped": skipped}
        answer = self._json("POST", f"/api/v1/runs/{_segment(run)}/metrics/", json_body={"step": int(step), "metrics": numbers})
        return {**answer, "skipped": skipped}

    def metrics(self, run: str, *, names: Sequence[str] | None = None, first: int | None = None, last: int | None = None) -> dict:
        """The run's series: the trainer's (`trainer`), the desk's own (`desk`), and the `warnings`."""
        query: dict[str, Any] = {}
        if names is not None:
            query["names"] = ",".join(names)
        if first is not None:
            query["from"] = int(first)
        if last is not None:
            query["to"] = int(last)
        return self._json("GET", f"/api/v1/runs/{_segment(run)}/metrics/", params=query)

    def post_step(
        self,
        run: str,
        step: int,
        groups: Iterable[Mapping[str, Any]],
        *,
        strict: bool = True,
        compress: bool | None = None,
        timeout: float | None = None,
    ) -> dict:
        """Post a step's groups as `gagar-group/1` JSON lines; returns the ingest report.

        Each group is a dict in the ingest shape (`uid`, `task` with `instance_id`,
        `rollouts` with `index` and `reward`, ...); `format`, `run` and `step` are filled
        in when missing and must match when present. With `strict` (the default) a report
        that refused some lines (207) raises `GagarError` carrying the report as `.body`.
        `compress`: gzip the body (default: when it is over 1 MiB).
        """
        data = encode_groups(run, step, groups)
        headers = {"Content-Type": "application/x-ndjson"}
        if compress or (compress is None and len(data) > 1 << 20):
            data = gzip_module.compress(data, compresslevel=5)
            headers["Content-Encoding"] = "gzip"
        answer = self._request("POST", "/api/v1/groups/", data=data, headers=headers, timeout=timeout or max(self.timeout, 300))
        report = answer.json()
        if strict and answer.status == 207:
            refused = report.get("errors") if isinstance(report, dict) else None
            raise GagarError(
                f"207 from POST /api/v1/groups/: some lines were refused: {_short(refused or report)}",
                status=207,
                detail=refused or report,
                body=report,
                method="POST",
                url=answer.url,
            )
        return report

    def step_status(self, run: str, step: int) -> dict:
        """`{run, step, groups, mixed, graded, invalid, timeout, pending, fallback, final, inputs_version}`."""
        return self._json("GET", f"/api/v1/steps/{int(step)}/", params={"run": run})

    def grade_step(self, run: str, step: int, backend: str | None = None) -> dict:
        """Start (or restart) grading of a step (admin token)."""
        body = {"backend": backend} if backend else {}
        return self._json("POST", f"/api/v1/steps/{int(step)}/grade/", params={"run": run}, json_body=body)

    # -- advantages --------------------------------------------------------------------

    def advantage_rows(
        self,
        run: str,
        step: int,
        *,
        inputs_version: str | None = None,
        wait: int | None = None,
        mapping: str | None = None,
        patience: float | None = None,
        turn_weights: bool = False,
    ) -> Rows:
        """The step's `gagar-advantage/1` rows (dicts), from the JSON Lines export; with
        `turn_weights`, each with its rollout's turn weights (gagar_client.token_weights).

        With `wait`, the server may answer 429 when too many requests wait already (per token,
        project or server); `patience`, a time.monotonic() deadline, keeps retrying those after
        their Retry-After until then (wait_for_step passes its own deadline).
        """
        params = {
            "run": run,
            "step": int(step),
            "format": "jsonl",
            "inputs_version": inputs_version,
            "mapping": mapping,
            "turn_weights": 1 if turn_weights else None,
        }
        timeout = self.timeout
        if wait:
            params["wait"] = int(wait)
            timeout = self.timeout + wait
        answer = self._request(
            "GET",
            "/api/v1/advantages/",
            params=params,
            headers={"Accept": "application/x-ndjson"},
            timeout=timeout,
            patience=patience,
        )
        rows = parse_jsonl(answer.body)
        version = answer.headers.get("gagar-inputs-version")
        if version is None and rows and rows[0].get("inputs_version") is not None:
            version = str(rows[0]["inputs_version"])
        return Rows(
            rows, final=_header_bool(answer.headers.get("gagar-step-final")), inputs_version=version, headers=answer.headers
        )

    def wait_for_step(
        self, run: str, step: int, *, timeout: float = 600, poll: float = MAX_WAIT, min_interval: float = 1.0
    ) -> Rows:
        """Rows of the step once it is final (`Gagar-Step-Final: true`).

        Each request asks the server to hold it up to `poll` seconds (at most 300) or the
        time left; a server that answers sooner than asked is polled again after at least
        `min_interval` seconds. Raises `StepNotFinal` (a TimeoutError, with `.rows`) after
        `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        interval = min_interval
        while True:
            left = deadline - time.monotonic()
            wait = int(max(0, min(poll, MAX_WAIT, left)))
            started = time.monotonic()
            rows = self.advantage_rows(run, step, wait=wait or None, patience=deadline)
            if rows.final:
                return rows
            if rows.final is None:
                raise GagarError(
                    "the server sent no Gagar-Step-Final header: it does not support waiting for a step",
                    method="GET",
                    url="/api/v1/advantages/",
                )
            left = deadline - time.monotonic()
            if left <= 0:
                raise StepNotFinal(
                    f"step {step} of run {run!r} is not final after {timeout:g} s",
                    rows=rows,
                    method="GET",
                    url="/api/v1/advantages/",
                )
            if time.monotonic() - started < max(wait, min_interval) * 0.5:
                # Answered well before the time asked: do not hammer the server.
                self._sleep(min(interval, left))
                interval = min(interval * 2, 10.0)

    def advantages(
        self, run: str, step: int, *, inputs_version: str | None = None, column: str = "redistributed_advantage"
    ) -> dict[tuple[str, int], float]:
        """`{(uid, index): A*}` for every rollout of the step."""
        return advantage_map(self.advantage_rows(run, step, inputs_version=inputs_version), column=column)

    def advantages_frame(self, run: str, step: int, *, inputs_version: str | None = None):
        """The step's rows as a pandas DataFrame (Parquet when pyarrow is installed, else JSON Lines).

        pandas is optional: without it this raises ModuleNotFoundError saying what to install.
        """
        try:
            import pandas as pd
        except ModuleNotFoundError as exc:
            raise ModuleNotFoundError(
                "advantages_frame needs pandas: pip install 'gagar-client[pandas]' (or 'gagar-client[parquet]' for "
                "pandas with pyarrow); advantages() and advantage_rows() need neither",
                name="pandas",
            ) from exc

        try:
            import pyarrow  # noqa: F401
        except ImportError:
            return pd.DataFrame(list(self.advantage_rows(run, step, inputs_version=inputs_version)))
        import io

        params = {"run": run, "step": int(step), "format": "parquet", "inputs_version": inputs_version}
        answer = self._request("GET", "/api/v1/advantages/", params=params, headers={"Accept": "application/vnd.apache.parquet"})
        return pd.read_parquet(io.BytesIO(answer.body))


def advantage_map(rows: Iterable[Mapping[str, Any]], *, column: str = "redistributed_advantage") -> dict[tuple[str, int], float]:
    out: dict[tuple[str, int], float] = {}
    for row in rows:
        key = (str(row["uid"]), int(row["index"]))
        if key in out:
            raise GagarError(f"the export holds rollout {key} twice")
        value = row[column]
        out[key] = float(value) if value is not None else 0.0
    return out


def encode_groups(run: str, step: int, groups: Iterable[Mapping[str, Any]]) -> bytes:
    """`gagar-group/1` JSON lines for a step; fills `format`, `run` and `step` in."""
    lines = []
    for n, group in enumerate(groups):
        line = dict(group)
        for key, value in (("format", GROUP_FORMAT), ("run", run), ("step", int(step))):
            if line.setdefault(key, value) != value:
                raise ValueError(f"group {n} (uid {line.get('uid')!r}): {key} is {line[key]!r}, expected {value!r}")
        if not line.get("uid"):
            raise ValueError(f"group {n}: uid is required")
        lines.append(json.dumps(line, ensure_ascii=False, allow_nan=False, separators=(",", ":")))
    if not lines:
        raise ValueError("post_step needs at least one group")
    return ("\n".join(lines) + "\n").encode("utf-8")


def _segment(value: str) -> str:
    return urllib.parse.quote(str(value), safe="")


def _short(value: Any, limit: int = 500) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
