"""The method's failure signatures, read from a run's series. Pure: no Django.

Three warnings, each with the figures that raised it and the steps behind it:

- **collapse**: over a window of steps, the policy's entropy rising and its responses growing
  while the pass rate falls. The method's own ablation without sum preservation saw entropy go
  0.359 → 0.905 and the mean trajectory 47.1k → 114.1k tokens within 30 steps while the pass
  rate fell 56.5 % → 48.8 %; the defaults (+10 %, +10 %, −1 point between the halves of a
  10-step window) raise it in the first ten of those steps.
- **credit imbalance**: a step whose Σ A* over passes differs from Σ A: an export that was not
  sum-preserving (the desk's `credit_imbalance` series).
- **hacking**: the training reward rising while an evaluation metric falls over the window, or
  the share of passes marked cheats rising.

A window compares the mean of its second half with the mean of its first, so one noisy step
does not raise a warning; consecutive windows that match are one warning over their steps.
Which logged series is "entropy", "response length" or an evaluation is decided by name
(`role_of`), bounded string checks only.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

Series = Sequence[tuple[int, float]]

ENTROPY_NAMES = ("actor/entropy", "policy/entropy", "entropy", "actor/entropy_loss", "train/entropy")
LENGTH_NAMES = (
    "response_length/mean",
    "completions/mean_length",
    "response_length",
    "avg_response_length",
    "generate/response_length",
)
REWARD_NAMES = ("critic/score/mean", "reward", "train/reward", "rewards/mean", "critic/rewards/mean")
EVAL_PREFIXES = ("eval/", "val/", "val-core/", "val-aux/", "test/", "evaluation/")


MAX_WINDOW = 1_000


def _threshold(default: float, warning: str, unit: str, meaning: str) -> Any:
    """A field of Thresholds with what a settings page says of it (`meaning` in plain words)."""
    return field(default=default, metadata={"warning": warning, "unit": unit, "meaning": meaning})


@dataclass(frozen=True)
class Thresholds:
    """What raises a warning; a project may change any of them (Project.health_thresholds).

    Each field's metadata says which warning it belongs to, its unit and what it means, for the
    project's Health warnings page and the API."""

    # Between the means of a window's halves. The ablation's 30 steps, taken as straight lines,
    # move each half of a 10-step window by about +20 % entropy, +19 % length and -1.3 points of
    # pass rate: these defaults raise the warning in its first window.
    window: int = _threshold(
        10,
        "all",
        "steps",
        "How many consecutive steps a signature is looked for over: the mean of the window's second half is"
        f" compared with the mean of its first, so one noisy step raises nothing. A whole number from 4 to {MAX_WINDOW}.",
    )
    entropy_rise: float = _threshold(
        0.10,
        "collapse",
        "relative (0.10 = +10 %)",
        "How much the policy's entropy must rise between the window's halves for a collapse signature.",
    )
    length_rise: float = _threshold(
        0.10,
        "collapse",
        "relative (0.10 = +10 %)",
        "How much the mean response length must grow between the window's halves for a collapse signature"
        " (the desk's tokens per rollout when the trainer logs no length).",
    )
    pass_rate_fall: float = _threshold(
        0.01,
        "collapse",
        "absolute (0.01 = 1 point)",
        "How far the pass rate must fall between the window's halves for a collapse signature;"
        " entropy, length and pass rate must all move together.",
    )
    reward_rise: float = _threshold(
        0.01,
        "hacking",
        "absolute",
        "How much the training reward must rise between the window's halves, while an evaluation falls, for a hacking signature.",
    )
    eval_fall: float = _threshold(
        0.01,
        "hacking",
        "absolute",
        "How far an evaluation metric (eval/…, val/…) must fall between the window's halves, while the"
        " training reward rises, for a hacking signature.",
    )
    cheat_share_rise: float = _threshold(
        0.02,
        "hacking",
        "absolute (0.02 = 2 points)",
        "How much the share of passes marked cheats must rise between the window's halves for a hacking signature.",
    )
    imbalance: float = _threshold(
        1e-6,
        "credit_imbalance",
        "advantage units",
        "How far Σ A* may differ from Σ A over a step's graded passes before the step is warned as not"
        " sum-preserving (an export that moved credit in or out).",
    )

    @classmethod
    def from_dict(cls, data: Mapping[str, object] | None) -> Thresholds:
        """Defaults overridden by the numbers `data` gives; unknown keys and non-numbers ignored,
        a window of fewer than 4 steps taken as 4. Lenient: for reading what is stored."""
        given: dict[str, Any] = {}
        for f in fields(cls):
            value = (data or {}).get(f.name)
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                given[f.name] = max(4, int(value)) if f.name == "window" else float(value)
        return cls(**given)

    @classmethod
    def checked(cls, data: Mapping[str, object]) -> Thresholds:
        """Defaults overridden by `data`, strictly: ThresholdsRefused, naming every bad field, for a
        key that is no threshold, a value that is not a finite number >= 0, or a window that is not
        a whole number from 4 to MAX_WINDOW. A key left out keeps its default.

        >>> Thresholds.checked({"window": 12, "entropy_rise": 0.2}).window
        12
        >>> Thresholds.checked({"window": 2.5}) # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        ThresholdsRefused: window must be a whole number of steps from 4 to 1000
        """
        known = {f.name for f in fields(cls)}
        errors = {str(key)[:100]: "is not a threshold" for key in data if key not in known}
        given: dict[str, Any] = {}
        for name in (f.name for f in fields(cls)):
            if name not in data:
                continue
            value = data[name]
            number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
            if name == "window":
                if number is None or not math.isfinite(number) or number != int(number) or not 4 <= number <= MAX_WINDOW:
                    errors[name] = f"must be a whole number of steps from 4 to {MAX_WINDOW}"
                else:
                    given[name] = int(number)
            elif number is None or not math.isfinite(number) or number < 0:
                errors[name] = "must be a number, 0 or more"
            else:
                given[name] = float(number)
        if errors:
            raise ThresholdsRefused(errors)
        return cls(**given)

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def overrides(self) -> dict[str, float]:
        """The values that differ from the defaults: what a project stores, so a default it never
        changed follows the method's."""
        default = Thresholds()
        return {name: value for name, value in self.as_dict().items() if value != getattr(default, name)}


class ThresholdsRefused(ValueError):
    """Thresholds not taken; `errors` maps each bad field to what is wrong with it, `field` is the first."""

    def __init__(self, errors: Mapping[str, str]):
        self.errors = dict(errors)
        self.field = next(iter(self.errors))
        super().__init__("; ".join(f"{name} {message}" for name, message in self.errors.items()))


def form_values(data: Mapping[str, str], names: Sequence[str]) -> dict[str, object]:
    """A form's text for the fields `names`, as numbers for Thresholds.checked: an empty field is
    left out (its default), text that is no number is passed on as text for `checked` to refuse."""
    out: dict[str, object] = {}
    for name in names:
        raw = str(data.get(name) or "").strip()
        if not raw:
            continue
        try:
            out[name] = int(raw) if raw.lstrip("+-").isdigit() and len(raw) <= 20 else float(raw)
        except ValueError:
            out[name] = raw[:100]
    return out


def threshold_fields() -> list[tuple[str, float, str, str, str]]:
    """Each threshold as (name, default, warning, unit, meaning), in Thresholds' order."""
    default = Thresholds()
    return [
        (f.name, getattr(default, f.name), f.metadata["warning"], f.metadata["unit"], f.metadata["meaning"])
        for f in fields(Thresholds)
    ]


@dataclass(frozen=True)
class HealthWarning:
    kind: str  # collapse | credit_imbalance | hacking
    title: str
    first_step: int
    last_step: int
    evidence: list[str] = field(default_factory=list)
    series: list[str] = field(default_factory=list)  # what to plot to see it (timeline names)

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "title": self.title,
            "steps": [self.first_step, self.last_step],
            "evidence": list(self.evidence),
            "series": list(self.series),
        }


def role_of(names: Sequence[str], role: str) -> str | None:
    """The logged series that plays `role` (entropy, length, reward): a known name first, else
    the first name whose last part says it."""
    known = {"entropy": ENTROPY_NAMES, "length": LENGTH_NAMES, "reward": REWARD_NAMES}[role]
    present = set(names)
    for name in known:
        if name in present:
            return name
    words = {"entropy": ("entropy",), "length": ("response_length", "mean_length"), "reward": ("reward", "score")}[role]
    for name in sorted(names):
        tail = name.rsplit("/", 1)[-1].lower() if role != "length" else name.lower()
        if any(word in tail for word in words) and not is_eval(name):
            return name
    return None


def is_eval(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith(EVAL_PREFIXES) or lowered.startswith("eval_")


def _aligned(window: int, *series: Series) -> list[tuple[int, tuple[float, ...]]]:
    """Steps every series has, with their values, ascending."""
    maps = [dict(s) for s in series]
    common = sorted(set.intersection(*(set(m) for m in maps))) if maps else []
    return [(step, tuple(m[step] for m in maps)) for step in common]


def _halves(rows: list[tuple[int, tuple[float, ...]]], k: int) -> tuple[float, float]:
    half = len(rows) // 2
    first = [values[k] for _, values in rows[:half]]
    second = [values[k] for _, values in rows[half:]]
    return sum(first) / len(first), sum(second) / len(second)


def _relative(before: float, after: float) -> float:
    return (after - before) / abs(before) if before else (0.0 if after == before else float("inf"))


def _spans(hits: list[tuple[int, int, list[str]]]) -> list[tuple[int, int, list[str]]]:
    """Overlapping or touching (first, last) windows merged, keeping the evidence of the last."""
    merged: list[tuple[int, int, list[str]]] = []
    for first, last, evidence in hits:
        if merged and first <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(last, merged[-1][1]), evidence)
        else:
            merged.append((first, last, evidence))
    return merged


def _windows(rows: list[tuple[int, tuple[float, ...]]], window: int) -> Iterator[list[tuple[int, tuple[float, ...]]]]:
    for end in range(window, len(rows) + 1):
        yield rows[end - window : end]


def _pct(x: float) -> str:
    return f"{x:+.0%}" if x != float("inf") else "from 0"


def collapse(trainer: Mapping[str, Series], desk: Mapping[str, Series], t: Thresholds) -> list[HealthWarning]:
    entropy = role_of(list(trainer), "entropy")
    length = role_of(list(trainer), "length")
    length_series = trainer[length] if length else desk.get("tokens", [])
    length_name = length or "desk:tokens"
    pass_rate = desk.get("pass_rate", [])
    if entropy is None or not length_series or not pass_rate:
        return []
    rows = _aligned(t.window, trainer[entropy], length_series, pass_rate)
    hits = []
    for rows_in in _windows(rows, t.window):
        (e0, e1), (l0, l1), (p0, p1) = (_halves(rows_in, k) for k in range(3))
        if _relative(e0, e1) >= t.entropy_rise and _relative(l0, l1) >= t.length_rise and p0 - p1 >= t.pass_rate_fall:
            span = f"steps {rows_in[0][0]}–{rows_in[-1][0]}"
            hits.append(
                (
                    rows_in[0][0],
                    rows_in[-1][0],
                    [
                        f"{entropy} rose {e0:.3g} → {e1:.3g} ({_pct(_relative(e0, e1))}) over {span}",
                        f"{length_name} grew {l0:.4g} → {l1:.4g} ({_pct(_relative(l0, l1))})",
                        f"pass rate fell {p0:.1%} → {p1:.1%} ({(p1 - p0) * 100:+.1f} points)",
                    ],
                )
            )
    return [
        HealthWarning(
            "collapse",
            "Collapse signature: entropy and length rising while the pass rate falls",
            first,
            last,
            evidence,
            [entropy, length_name, "desk:pass_rate"],
        )
        for first, last, evidence in _spans(hits)
    ]


def credit_imbalance(desk: Mapping[str, Series], t: Thresholds) -> list[HealthWarning]:
    out = []
    for step, value in desk.get("credit_imbalance", []):
        if abs(value) > t.imbalance:
            out.append(
                HealthWarning(
                    "credit_imbalance",
                    f"Credit imbalance at step {step}: the export was not sum-preserving",
                    step,
                    step,
                    [f"Σ A* − Σ A over the step's graded passes is {value:+.6g}"],
                    ["desk:credit_imbalance"],
                )
            )
    return out


def hacking(trainer: Mapping[str, Series], desk: Mapping[str, Series], t: Thresholds) -> list[HealthWarning]:
    out: list[HealthWarning] = []
    reward = role_of(list(trainer), "reward")
    reward_series, reward_name = (trainer[reward], reward) if reward else (desk.get("pass_rate", []), "desk:pass_rate")
    for name in sorted(n for n in trainer if is_eval(n)):
        rows = _aligned(t.window, reward_series, trainer[name])
        hits = []
        for rows_in in _windows(rows, t.window):
            (r0, r1), (v0, v1) = _halves(rows_in, 0), _halves(rows_in, 1)
            if r1 - r0 >= t.reward_rise and v0 - v1 >= t.eval_fall:
                hits.append(
                    (
                        rows_in[0][0],
                        rows_in[-1][0],
                        [
                            f"{reward_name} rose {r0:.3g} → {r1:.3g} over steps {rows_in[0][0]}–{rows_in[-1][0]}",
                            f"{name} fell {v0:.3g} → {v1:.3g}",
                        ],
                    )
                )
        out += [
            HealthWarning(
                "hacking",
                f"Hacking signature: training reward rising while {name} falls",
                first,
                last,
                evidence,
                [reward_name, name],
            )
            for first, last, evidence in _spans(hits)
        ]
    rows = _aligned(t.window, desk.get("cheat_share", []))
    hits = []
    for rows_in in _windows(rows, t.window):
        c0, c1 = _halves(rows_in, 0)
        if c1 - c0 >= t.cheat_share_rise:
            span = f"steps {rows_in[0][0]}–{rows_in[-1][0]}"
            hits.append(
                (rows_in[0][0], rows_in[-1][0], [f"the share of passes marked cheats rose {c0:.1%} → {c1:.1%} over {span}"])
            )
    out += [
        HealthWarning("hacking", "Hacking signature: the cheat share is rising", first, last, evidence, ["desk:cheat_share"])
        for first, last, evidence in _spans(hits)
    ]
    return out


def health_warnings(
    trainer: Mapping[str, Series], desk: Mapping[str, Series], thresholds: Thresholds | None = None
) -> list[HealthWarning]:
    """Every warning the series raise, by first step."""
    t = thresholds or Thresholds()
    found = collapse(trainer, desk, t) + credit_imbalance(desk, t) + hacking(trainer, desk, t)
    return sorted(found, key=lambda w: (w.first_step, w.kind))
