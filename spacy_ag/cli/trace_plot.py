"""`spacy-ag plot`: a training run's trace.jsonl as one figure, against iterations and against seconds.

Every trainer writes one JSON line per traced step to OUTPUT/trace.jsonl
(`spacy_ag.train.progress.TraceLog`); what a line holds depends on the trainer:

* MCMC (`spacy_ag.runs.mcmc_chain`): ``iteration`` and ``chain``, ``log_posterior``,
  ``tables``, ``a`` and ``b`` per adaptor, ``seconds`` of that iteration,
  ``token_f`` on evaluated iterations;
* online and batch VB (`spacy_ag.runs.online_runner`): ``minibatch``,
  ``batch_loglik`` (the minibatch's log likelihood before its step),
  ``grammaton`` (entries per adaptor), ``a`` and ``b`` per adaptor,
  ``seconds`` since the previous line, ``token_f`` when evaluated;
* topic models online (`spacy_ag.topics.topic_model`): as online, one adaptor per
  topic (and WORD), with ``documents_seen``;
* topic models by Gibbs sweeps (`spacy_ag.topics.gibbs`): ``iteration`` (the
  sweep), ``log_posterior``, ``tables`` (TOPIC and WORD), ``b_median`` (the
  topics' concentrations) and ``lexicon_b``, ``seconds`` since the first sweep;
* pipelines (`spacy_ag.train.pipeline`): MCMC lines with the ``component``.

One figure has a row per quantity (log posterior or minibatch log likelihood,
tables or entries per adaptor, the Pitman-Yor a and b per adaptor, token F when
gold words were given) and two columns: against the step (iteration, sweep or
minibatch) and against the training seconds summed along the trace. The chains
of an MCMC run are overlaid, one colour each.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import typer

from . import app
from ._common import errors_as_lines, good

__all__ = ["TraceGroup", "plot_trace", "read_trace", "trace_groups", "trace_rows"]

#: More names than this in one panel (a topic model's adaptors) are drawn without a legend.
MAX_LEGEND = 12
STEP_NAMES = {"mcmc": "iteration", "gibbs": "sweep", "online": "minibatch"}


@dataclass
class TraceGroup:
    """The lines of one chain (of one component), of one kind, in step order."""

    component: str
    chain: int
    kind: str  # "mcmc", "gibbs" or "online"
    lines: List[Dict] = field(default_factory=list)
    steps: List[float] = field(default_factory=list)
    seconds: List[float] = field(default_factory=list)

    @property
    def name(self) -> str:
        parts = ([self.component] if self.component else []) + [f"chain {self.chain}"]
        return " ".join(parts)


def _line_kind(line: Dict) -> Optional[str]:
    if "minibatch" in line:
        return "online"
    if "iteration" in line:
        return "gibbs" if "b_median" in line or "alpha_sum" in line else "mcmc"
    return None


def read_trace(path: Path) -> Tuple[Path, List[Dict]]:
    """(the trace file, its lines) of a training output directory or of a trace.jsonl."""
    from ..errors import Errors, SpacyAgError
    from ..input_formats import json_object_lines

    path = Path(path)
    trace = path / "trace.jsonl" if path.is_dir() else path
    if not trace.is_file():
        raise SpacyAgError(Errors.E141.format(path=path))

    def not_an_object(number: int, why: str) -> Exception:
        return SpacyAgError(Errors.E142.format(path=trace, line=number, err=why))

    lines = [line for _, line in json_object_lines(trace, not_an_object)]
    return trace, lines


def trace_groups(lines: Sequence[Dict]) -> List[TraceGroup]:
    """The lines by (component, chain, kind), each in step order with its x values.

    A step traced twice (a run resumed from a checkpoint before its last traced step) keeps its
    later line. The seconds are the training time up to each line: MCMC and online lines hold
    the seconds since the previous line, which are summed; Gibbs lines the seconds since the
    run (or its resumption) started, which are continued across a resumption.
    """
    groups: Dict[Tuple[str, int, str], Dict[float, Dict]] = {}
    for line in lines:
        kind = _line_kind(line)
        if kind is None:
            continue
        step = line["minibatch"] if kind == "online" else line["iteration"]
        key = (str(line.get("component", "")), int(line.get("chain", 0)), kind)
        groups.setdefault(key, {})[float(step)] = line
    out = []
    for (component, chain, kind), by_step in sorted(groups.items()):
        group = TraceGroup(component, chain, kind)
        total, offset, last = 0.0, 0.0, 0.0
        for step in sorted(by_step):
            line = by_step[step]
            seconds = float(line.get("seconds", 0.0) or 0.0)
            if kind == "gibbs":
                if seconds < last:  # a resumed run counts from 0 again
                    offset += last
                last = seconds
                total = offset + seconds
            else:
                total += seconds
            group.lines.append(line)
            group.steps.append(step)
            group.seconds.append(total)
        out.append(group)
    return out


# ---------------------------------------------------------------------------------------------- quantities
def _number(value) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _scalar(key: str) -> Callable[[Dict], Dict[str, float]]:
    def get(line: Dict) -> Dict[str, float]:
        value = _number(line.get(key))
        return {} if value is None else {"": value}

    return get


def _per_adaptor(key: str) -> Callable[[Dict], Dict[str, float]]:
    def get(line: Dict) -> Dict[str, float]:
        value = line.get(key)
        if not isinstance(value, dict):
            return {}
        return {str(k): v for k, v in ((k, _number(v)) for k, v in value.items()) if v is not None}

    return get


def _gibbs_b(line: Dict) -> Dict[str, float]:
    out = {}
    if _number(line.get("b_median")) is not None:
        out["TOPIC (median over topics)"] = float(line["b_median"])
    if _number(line.get("lexicon_b")):
        out["WORD (shared lexicon)"] = float(line["lexicon_b"])
    return out


#: Rows of the figure: (title for MCMC and Gibbs lines, title for online lines, {kind: what a line of that
#: kind gives}), in order.
ROWS: List[Tuple[str, str, Dict[str, Callable[[Dict], Dict[str, float]]]]] = [
    ("log posterior", "minibatch log likelihood",
     {"mcmc": _scalar("log_posterior"), "gibbs": _scalar("log_posterior"), "online": _scalar("batch_loglik")}),
    ("tables per adaptor", "grammaton entries per adaptor",
     {"mcmc": _per_adaptor("tables"), "gibbs": _per_adaptor("tables"), "online": _per_adaptor("grammaton")}),
    ("Pitman-Yor a per adaptor", "Pitman-Yor a per adaptor", {"mcmc": _per_adaptor("a"), "online": _per_adaptor("a")}),
    ("Pitman-Yor b per adaptor", "Pitman-Yor b per adaptor",
     {"mcmc": _per_adaptor("b"), "online": _per_adaptor("b"), "gibbs": _gibbs_b}),
    ("token F", "token F", {kind: _scalar("token_f") for kind in STEP_NAMES}),
]


def _row_title(sampled: str, online: str, kinds: Sequence[str]) -> str:
    """The row's title for the kinds of lines it plots."""
    if "online" not in kinds or sampled == online:
        return sampled
    return online if set(kinds) == {"online"} else f"{sampled} (sampled) / {online} (online)"


def _describe(groups: Sequence[TraceGroup]) -> str:
    kinds = sorted({g.kind for g in groups})
    topic = any("documents_seen" in line for g in groups for line in g.lines)
    parts = []
    for kind in kinds:
        mine = [g for g in groups if g.kind == kind]
        steps = max(len(g.steps) for g in mine)
        if kind == "mcmc":
            parts.append(f"MCMC, {len(mine)} chain{'s' if len(mine) > 1 else ''}, {steps} iterations")
        elif kind == "gibbs":
            parts.append(f"topic model by Gibbs sampling, {steps} sweeps")
        else:
            parts.append(f"{'topic model ' if topic else ''}online, {steps} traced minibatches")
    return "; ".join(parts)


#: One curve of a panel: its group, its name (an adaptor, or "") and its (step, seconds, value) points.
Series = Tuple[TraceGroup, str, List[Tuple[float, float, float]]]


def trace_rows(groups: Sequence[TraceGroup]) -> List[Tuple[str, List[Series]]]:
    """The figure's rows that the trace has data for: (title, curves), in `ROWS` order."""
    rows = []
    for sampled, online, getters in ROWS:
        series: List[Series] = []
        for g in groups:
            get = getters.get(g.kind)
            if get is None:
                continue
            values = [get(line) for line in g.lines]
            for name in dict.fromkeys(name for v in values for name in v):
                points = [(x, s, v[name]) for x, s, v in zip(g.steps, g.seconds, values) if name in v]
                if points:
                    series.append((g, name, points))
        if series:
            rows.append((_row_title(sampled, online, sorted({g.kind for g, _, _ in series})), series))
    return rows


def plot_trace(source: Path, output: Optional[Path] = None, *, dpi: int = 110) -> Path:
    """Plot the trace of a training output directory (or a trace.jsonl) to `output` (a PNG, or
    any format matplotlib writes, by its suffix; default: trace.png beside the trace).

    RETURNS (Path): the figure written.
    """
    from ..errors import Errors, SpacyAgError

    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise SpacyAgError(Errors.E140) from None
    trace, lines = read_trace(source)
    groups = trace_groups(lines)
    if not groups:
        raise SpacyAgError(Errors.E143.format(path=trace))
    output = Path(output) if output is not None else trace.with_name("trace.png")
    rows = trace_rows(groups)
    several_groups = len(groups) > 1
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf"]
    styles = ["-", "--", ":", "-."]
    fig = Figure(figsize=(12, 2.5 * len(rows) + 0.8), constrained_layout=True)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(rows), 2, squeeze=False)
    step_label = " / ".join(dict.fromkeys(STEP_NAMES[g.kind] for g in groups))
    for r, (title, series) in enumerate(rows):
        names = list(dict.fromkeys(name for _, name, _ in series))
        crowded = len(series) > MAX_LEGEND
        for g, name, points in series:
            gi, ni = groups.index(g), names.index(name)
            colour = palette[gi % len(palette)] if several_groups else palette[ni % len(palette)]
            style = styles[ni % len(styles)] if several_groups else "-"
            label = " · ".join(p for p in ((g.name if several_groups else ""), name) if p) or None
            marker = "o" if len(points) <= 30 or title == "token F" else None
            for column, x in ((0, [p[0] for p in points]), (1, [p[1] for p in points])):
                axes[r][column].plot(x, [p[2] for p in points], style, color=colour, marker=marker, markersize=3,
                                     linewidth=0.8 if crowded else 1.4, label=None if crowded else label)
        values = [p[2] for _, _, points in series for p in points]
        positive = [v for v in values if v > 0]
        for column in (0, 1):
            ax = axes[r][column]
            ax.set_title(title + (f" ({len(series)} series)" if crowded else ""), fontsize=10)
            ax.grid(True, alpha=0.3)
            if title.startswith("Pitman-Yor b") and positive and len(positive) == len(values) \
                    and max(positive) / min(positive) > 100:
                ax.set_yscale("log")
            ax.set_xlabel(step_label if column == 0 else "training seconds", fontsize=9)
        if not crowded and any(label for label in axes[r][0].get_legend_handles_labels()[1]):
            axes[r][0].legend(fontsize=8, loc="best")
    fig.suptitle(f"{trace}: {_describe(groups)}", fontsize=11)
    output.parent.mkdir(parents=True, exist_ok=True)
    part = output.with_name(output.name + ".part")
    fig.savefig(part, dpi=dpi, format=(output.suffix[1:] or "png").lower())
    os.replace(part, output)
    return output


@app.command("plot")
@errors_as_lines
def plot_cli(
    training_dir: Path = typer.Argument(..., metavar="TRAINING_DIR",
                                        help="Output directory of spacy-ag train (or its trace.jsonl)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Figure to write: .png, .svg or .pdf (default: "
                                               "TRAINING_DIR/trace.png)"),
) -> None:
    """Plot a training run's trace: log posterior (or the minibatch log likelihood online), tables
    per adaptor, the Pitman-Yor a and b, and token F when gold words were given, each against
    the iterations (sweeps, minibatches) and against the training seconds. MCMC chains are
    overlaid, one colour each. Needs matplotlib: pip install spacy-ag[plot].
    """
    written = plot_trace(training_dir, output)
    good(f"Plot written to {written}")
