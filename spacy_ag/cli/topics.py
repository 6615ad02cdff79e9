"""`spacy-ag topics` and `spacy-ag evaluate-topics`: look at and score a trained topic model.

MODEL is a topic-model directory (`spacy-ag train` with a topic config
writes OUTPUT/model) or a spaCy pipeline directory with an ``ag_topics``
component.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import _errors_as_lines, _require_file, good, info


def load_topic_model(path: Path):
    """A TopicModel from its directory, or from the ag_topics component of a pipeline directory."""
    from ..serialize import ModelFileError
    from ..topics import TopicModel

    if (path / "state.npz").exists():
        return TopicModel.load(path)
    candidates = sorted(path.glob("*/model/state.npz")) if path.is_dir() else []
    for state in candidates:
        cfg = state.parent.parent / "cfg"
        if cfg.exists() and "n_topics" in json.loads(cfg.read_text(encoding="utf8")):
            return TopicModel.load(state.parent)
    raise ModelFileError(f"{path}: not a topic model directory nor a pipeline with an ag_topics component")


def format_topics(model, top: int) -> str:
    lines = []
    for i in range(model.n_topics):
        words = model.top_words(i, top)
        lines.append(f"topic {i:>2}  " + "  ".join(f"{w} {p:.3f}" for w, p in words))
    return "\n".join(lines)


def ranking_table(model, topic: int, top: int = 10):
    """How the ranks of a topic's final top words changed over the stream (Figure 4 of [ZBC14]):
    one row per word, one column per refinement (rank, or None when outside the recorded list)."""
    final = [w for w, _ in model.top_words(topic, top)]
    columns = [snap["documents_seen"] for snap in model.history]
    rows = {}
    for word in final:
        ranks = []
        for snap in model.history:
            listed = [w for w, _ in snap["topics"][topic]]
            ranks.append(listed.index(word) + 1 if word in listed else None)
        rows[word] = ranks
    return columns, rows


def plot_rankings(model, topic: int, top: int, out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError("--plot needs matplotlib: pip install matplotlib") from None
    columns, rows = ranking_table(model, topic, top)
    fig, ax = plt.subplots(figsize=(8, 5))
    depth = model.history_size + 1
    for word, ranks in rows.items():
        ax.plot(columns, [r if r is not None else depth for r in ranks], marker="o", label=word)
    ax.invert_yaxis()
    ax.set_xlabel("documents seen")
    ax.set_ylabel(f"rank in topic {topic} ({depth} = below the top {model.history_size})")
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)


def train_topics(config_path: Path, output: Optional[Path], overrides) -> None:
    """`spacy-ag train` on a topic config: online passes over documents (one per line), then
    the topics, their coherence on the held-out documents and the held-out likelihood."""
    import random

    from ..config import ConfigError, load_topic_config
    from ..topics import TopicModel
    from ..topics.coherence import coherence, read_documents
    from ._common import TraceLog

    v = load_topic_config(config_path, overrides)
    out = output or (Path(v["paths"]["output"]) if v["paths"]["output"] else None)
    if out is None:
        raise ConfigError(f"{config_path}: no output directory; pass --output DIR or set paths.output")
    corpus = v["corpus"]["path"]
    if not corpus:
        raise ConfigError(f"{config_path}: corpus.path is not set; give the documents with --paths.train FILE")
    docs = read_documents(_require_file(Path(corpus), "documents file"))
    t, seed = v["topics"], v["training"]["seed"]
    order = list(range(len(docs)))
    random.Random(seed).shuffle(order)
    n_held = int(round(v["corpus"]["heldout_fraction"] * len(docs)))
    held = [docs[i] for i in order[:n_held]]
    train = [docs[i] for i in order[n_held:]]
    info(f"{len(train)} training and {len(held)} held-out documents from {corpus}; {t['n_topics']} topics, "
         f"{t['passes']} pass{'es' if t['passes'] > 1 else ''}, minibatches of {v['online'].batch_size}")
    model = TopicModel(t["n_topics"], alpha=t["alpha"], a=t["a"], b=t["b"], online=v["online"],
                       local_iterations=t["local_iterations"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.cfg").write_text(v["config"].to_str(), encoding="utf8")
    steps = t["passes"] * -(-len(train) // v["online"].batch_size)
    with TraceLog(out / "trace.jsonl", steps, 1, interactive=False) as log:
        model.fit(train, passes=t["passes"], seed=seed, callback=log)
    model.save(out / "model")
    if held:  # the default reference corpus of `spacy-ag evaluate-topics OUTPUT/model`
        (out / "heldout.txt").write_text("".join(" ".join(d) + "\n" for d in held), encoding="utf8")
    good(f"Saved the topic model to {out / 'model'}")
    typer.echo(format_topics(model, t["top_words"]))
    if held:
        scores = coherence(model.topics(t["top_words"]), held, reference=f"{n_held} held-out documents")
        scores["heldout"] = model.heldout_loglik(held)
        (out / "scores.json").write_text(json.dumps(scores, indent=1) + "\n", encoding="utf8")
        info(f"coherence on the held-out documents: PMI {scores['pmi']:.4f}, NPMI {scores['npmi']:.4f}; "
             f"held-out log likelihood {scores['heldout']['per_word']:.4f} per word ({out / 'scores.json'})")


@app.command("topics")
@_errors_as_lines
def topics_cli(
    model_path: Path = typer.Argument(..., metavar="MODEL", help="Topic model or pipeline directory"),
    top: int = typer.Option(10, "--top", "-n", help="Words per topic"),
    history: Optional[int] = typer.Option(None, "--history",
                                          help="Show how this topic's top words ranked over the stream"),
    plot: Optional[Path] = typer.Option(None, "--plot", help="With --history: plot the rankings (PNG)"),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Also write the topics as JSON"),
) -> None:
    """The top words of every topic with their probabilities (E_q[pi]); with --history, the
    ranking of one topic's words over the stream (Figure 4 of Zhai et al. 2014)."""
    model = load_topic_model(model_path)
    if history is None:
        typer.echo(format_topics(model, top))
    else:
        if not 0 <= history < model.n_topics:
            raise ValueError(f"--history: topic {history} does not exist; topics are 0..{model.n_topics - 1}")
        columns, rows = ranking_table(model, history, top)
        typer.echo("word".ljust(14) + "".join(f"{c:>8}" for c in columns))
        for word, ranks in rows.items():
            typer.echo(word.ljust(14) + "".join(f"{r if r is not None else '-':>8}" for r in ranks))
        if plot is not None:
            plot_rankings(model, history, top, plot)
            good(f"Plot written to {plot}", err=True)
    if json_path is not None:
        data = {"topics": [model.top_words(i, top) for i in range(model.n_topics)], "history": model.history}
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf8")


@app.command("evaluate-topics")
@_errors_as_lines
def evaluate_topics_cli(
    model_path: Path = typer.Argument(..., metavar="MODEL", help="Topic model or pipeline directory"),
    reference: Optional[Path] = typer.Option(
        None, "--reference", "-r", help="Reference documents for co-occurrence, one per line (default: the "
                                        "held-out documents `spacy-ag train` wrote next to MODEL)"),
    heldout: Optional[Path] = typer.Option(None, "--heldout", help="Held-out documents for the likelihood "
                                                                   "(default: the reference documents)"),
    top: int = typer.Option(10, "--top", "-n", help="Top words per topic (T)"),
    window: int = typer.Option(10, "--window", help="Co-occurrence window in tokens"),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Also write the scores as JSON"),
) -> None:
    """Topic coherence (mean pairwise PMI and NPMI of the top words, ALGORITHMS.md 5.4) on a
    reference corpus, and the held-out log likelihood of documents."""
    from ..topics.coherence import coherence, read_documents

    if reference is None:
        reference = model_path.parent / "heldout.txt"
        if not reference.exists():
            raise ValueError(f"no --reference given and no {reference}; pass the reference documents with "
                             "--reference FILE")
    _require_file(reference, "reference file")
    model = load_topic_model(model_path)
    ref_docs = read_documents(reference)
    scores = coherence(model.topics(top), ref_docs, window=window, reference=str(reference))
    held = ref_docs if heldout is None else read_documents(_require_file(heldout, "held-out file"))
    scores["heldout"] = model.heldout_loglik(held)
    info(f"Topics of {model_path} ({model.n_topics}), top {top} words, reference {reference}:")
    typer.echo(f"PMI   {scores['pmi']:.4f}\nNPMI  {scores['npmi']:.4f}")
    h = scores["heldout"]
    typer.echo(f"held-out log likelihood {h['loglik']:.1f} over {h['tokens']} tokens ({h['per_word']:.4f} per word)")
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(scores, indent=1, default=str) + "\n", encoding="utf8")
