"""A small client for trainers: fetch redistributed advantages as a pandas DataFrame.

Depends only on the standard library, pandas and pyarrow, so it can be copied next to a
training script:

    from grading.client import fetch_advantages
    frame = fetch_advantages("https://gagar.example.org", token, run="flash-code-rl", step=28)
    reward_for = dict(zip(zip(frame.uid, frame["index"]), frame.redistributed_advantage))
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.parse
import urllib.request

import pandas as pd


class GagarError(RuntimeError):
    """The service refused the request; the message carries its explanation."""


def fetch_advantages(base_url: str, token: str, run: str, step: int | None = None, *, mapping: str | None = None,
                     project: str | None = None, timeout: float = 300.0) -> pd.DataFrame:
    """`gagar-advantage/1` rows of `run` (one `step`, or all), one row per rollout, ordered by group and index."""
    params = {"run": run, "format": "parquet"}
    if step is not None:
        params["step"] = str(step)
    if mapping:
        params["mapping"] = mapping
    if project:
        params["project"] = project
    url = f"{base_url.rstrip('/')}/api/v1/advantages/?{urllib.parse.urlencode(params)}"
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}", "Accept": "application/vnd.apache.parquet"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the caller chooses the server)
            body = response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")
        try:
            detail = json.loads(detail).get("detail", detail)
        except (ValueError, AttributeError):
            pass
        raise GagarError(f"{exc.code} from {url}: {detail}") from None
    return pd.read_parquet(io.BytesIO(body))
