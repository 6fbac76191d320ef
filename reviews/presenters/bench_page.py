"""The bench page's view model: the compare API's body laid out as table rows."""

from __future__ import annotations

from dataclasses import dataclass, field

from reviews.stats.bench import BENCH_FIGURES, BETWEEN_FIGURES

LABELS = {
    "exact_agreement": "Exact tier",
    "kappa": "κ (quadratic)",
    "alpha": "α (ordinal)",
    "tau": "τ-b",
    "pairwise_accuracy": "Pairwise",
    "top1": "Top-1",
    "cheat_precision": "Cheat precision",
    "cheat_recall": "Cheat recall",
}


@dataclass(frozen=True)
class Cell:
    value: float | None
    low: float | None
    high: float | None
    n: int


@dataclass(frozen=True)
class Row:
    name: str
    cells: list[Cell]
    tokens: float | None = None
    cost: float | None = None
    n_eff: float | None = None
    members: tuple[str, ...] = ()
    mean_kappa: float | None = None


@dataclass(frozen=True)
class CitationRow:
    """A grader's agreement with people on its cited and its uncited verdicts apart."""

    name: str
    uncited_verdicts: int
    uncited_judgments: int
    cited_groups: int
    cited: list[Cell]  # CITATION_FIGURES on the cited verdicts
    uncited: list[Cell]  # the same on the uncited ones


@dataclass(frozen=True)
class Move:
    """What a grader's fitted mapping would move on the run (the compare API's `would_move`)."""

    name: str
    factors: tuple[float, ...]  # fitted f of T1, T2, T3; empty without pairs
    n_pairs: int
    credit_moved: float | None
    n_changed: int | None
    n_rows: int | None
    t1_share: float | None
    run_grader: bool  # the run's policy grader: the one whose fit the run may activate


@dataclass(frozen=True)
class BenchPage:
    groups: int
    withheld: int
    figures: list[str]  # labels of the grader table's columns
    between_figures: list[str]
    graders: list[Row]
    paired: list[Row]
    between: list[Row]
    ceiling: list[tuple[str, Cell]]
    moves: list[Move] = field(default_factory=list)
    run_grader: str | None = None
    citation_figures: list[str] = field(default_factory=list)
    citations: list[CitationRow] = field(default_factory=list)

    @property
    def any_uncited(self) -> bool:
        return any(row.uncited_verdicts for row in self.citations)


# The figures the page gives on cited and uncited verdicts apart (the API gives them all).
CITATION_FIGURES = ("exact_agreement", "kappa", "pairwise_accuracy")


def _cell(figure: dict | None) -> Cell:
    figure = figure or {}
    return Cell(
        figure.get("value"), figure.get("low", figure.get("lo")), figure.get("high", figure.get("hi")), int(figure.get("n", 0))
    )


def bench_page(body: dict) -> BenchPage:
    graders = []
    for row in body["graders"]:
        jury = row.get("jury") or {}
        usage = row.get("usage_per_group") or {}
        graders.append(
            Row(
                name=row["grader"],
                cells=[_cell(row.get(name)) for name in BENCH_FIGURES],
                tokens=usage.get("tokens"),
                cost=usage.get("cost"),
                n_eff=jury.get("n_eff"),
                members=tuple(jury.get("members", ())),
                mean_kappa=jury.get("mean_kappa"),
            )
        )
    paired = [Row(f"{p['a']} − {p['b']}", [_cell(p.get(name)) for name in BENCH_FIGURES]) for p in body["paired"]]
    between = [Row(f"{p['a']} vs {p['b']}", [_cell(p.get(name)) for name in BETWEEN_FIGURES]) for p in body["between_graders"]]
    ceiling = [(f["label"], _cell(f)) for f in body["human_ceiling"].get("figures", {}).values()]
    moves = []
    for row in body["graders"]:
        move = row.get("would_move") or {}
        bands = move.get("mapping") or {}
        moves.append(
            Move(
                name=row["grader"],
                factors=tuple(bands[t][0] for t in ("T1", "T2", "T3")) if bands else (),
                n_pairs=int(move.get("n_pairs") or 0),
                credit_moved=move.get("credit_moved"),
                n_changed=move.get("n_changed"),
                n_rows=move.get("n_rows"),
                t1_share=move.get("t1_share"),
                run_grader=row["grader"] == body.get("run_grader"),
            )
        )
    citations = []
    for row in body["graders"]:
        split = row.get("citations") or {}
        cited, uncited = split.get("cited") or {}, split.get("uncited") or {}
        citations.append(
            CitationRow(
                name=row["grader"],
                uncited_verdicts=int(split.get("uncited_verdicts") or 0),
                uncited_judgments=int(split.get("uncited_judgments") or 0),
                cited_groups=int(cited.get("groups") or 0),
                cited=[_cell(cited.get(name)) for name in CITATION_FIGURES],
                uncited=[_cell(uncited.get(name)) for name in CITATION_FIGURES],
            )
        )
    return BenchPage(
        groups=body["groups"],
        withheld=body["withheld_open_blind_groups"] + body["withheld_queued_groups"],
        figures=[LABELS[name] for name in BENCH_FIGURES],
        between_figures=[LABELS[name] for name in BETWEEN_FIGURES],
        graders=graders,
        paired=paired,
        between=between,
        ceiling=ceiling,
        moves=moves,
        run_grader=body.get("run_grader"),
        citation_figures=[LABELS[name] for name in CITATION_FIGURES],
        citations=citations,
    )
