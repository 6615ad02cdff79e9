"""`spacy-ag topics`, `evaluate-topics` and `tag-topics`: look at, score and apply a trained topic model.

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
from ..errors import Errors
from ._common import TOPIC_MODEL, errors_as_lines, good, info, require_input_file, resolve_model_dir, warn
from .segment_parse import BACKEND_HELP, FORCE_HELP, RAY_ADDRESS_HELP, WORKERS_HELP, annotate_input


def load_topic_model(path: Path):
    """A TopicModel from its directory, a topic training output, or the ag_topics component of a
    pipeline directory (`resolve_model_dir`)."""
    from ..topics import TopicModel

    return TopicModel.load(resolve_model_dir(path, TOPIC_MODEL))


def history_column(snapshot) -> int:
    """Where a ranking was recorded: the Gibbs sweep, or the documents seen online."""
    for key in ("sweep", "sweeps", "documents_seen"):  # "sweeps": the one ranking of older Gibbs models
        if key in snapshot:
            return snapshot[key]
    return 0


def history_axis(model) -> str:
    """What the columns of `ranking_table` count."""
    gibbs = ["sweep" in snap or "sweeps" in snap for snap in model.history]
    if all(gibbs):
        return "Gibbs sweeps"
    return "documents seen" if not any(gibbs) else "Gibbs sweeps, then documents seen online"


def ranking_table(model, topic: int, top: int = 10):
    """How the ranks of a topic's final top words changed over training (Figure 4 of [ZBC14]):
    one row per word, one column per ranking, recorded at every refinement online and every
    `history_every` sweeps by Gibbs sampling (rank, or None when outside the recorded list)."""
    final = [w for w, _ in model.top_words(topic, top)]
    columns = [history_column(snap) for snap in model.history]
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
        raise ValueError(Errors.E472) from None
    columns, rows = ranking_table(model, topic, top)
    fig, ax = plt.subplots(figsize=(8, 5))
    depth = model.history_size + 1
    axis = history_axis(model)
    x = columns if axis != "Gibbs sweeps, then documents seen online" else list(range(len(columns)))
    for word, ranks in rows.items():
        ax.plot(x, [r if r is not None else depth for r in ranks], marker="o", label=word)
    if x is not columns:  # two scales: one tick per ranking, labelled with its own count
        ax.set_xticks(x, [str(c) for c in columns], fontsize="x-small", rotation=90)
    ax.invert_yaxis()
    ax.set_xlabel(axis)
    ax.set_ylabel(f"rank in topic {topic} ({depth} = below the top {model.history_size})")
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)


def _has_history(model, topic: int, model_path: Path) -> bool:
    """Whether `topic` exists (else an error) and the model recorded enough rankings to show (else a warning)."""
    if not 0 <= topic < model.n_topics:
        raise ValueError(Errors.E469.format(topic=topic, last=model.n_topics - 1))
    if len(model.history) >= 2:
        return True
    if getattr(model, "inference", "online") == "gibbs":
        how = ("(every topics.history_every sweeps and after the last): too few for a history; train with a "
               f"history_every below the sweeps ({model.sweeps})")
    else:
        how = ("(one per pruning, every online.refine_every minibatches): too few for a history; train on more "
               "minibatches or with a smaller refine_every")
    warn(Errors.W468.format(model_path=model_path, n_history=len(model.history), how=how))
    return False


@app.command("topics")
@errors_as_lines
def topics_cli(
    model_path: Path = typer.Argument(..., metavar="MODEL", help="Topic model or pipeline directory"),
    top: int = typer.Option(10, "--top", "-n", help="Words per topic"),
    history: Optional[int] = typer.Option(None, "--history",
                                          help="Show how this topic's top words ranked over the stream"),
    plot: Optional[Path] = typer.Option(None, "--plot", help="With --history: plot the rankings (PNG)"),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Also write the topics as JSON"),
    ldavis: Optional[Path] = typer.Option(None, "--ldavis", help="Also write the topics' pyLDAvis page (HTML) "
                                                                 "here (pip install 'spacy-ag[ldavis]')"),
    docs_path: Optional[Path] = typer.Option(None, "--docs", help="With --ldavis: the documents whose words and "
                                                                  "proportions it shows, one per line (default: "
                                                                  "the held-out documents `spacy-ag train` wrote "
                                                                  "next to MODEL)"),
) -> None:
    """The top words of every topic with their probabilities (E_q[pi]); with --history, the
    ranking of one topic's words over the stream (Figure 4 of Zhai et al. 2014); with --ldavis,
    the topics as a pyLDAvis page."""
    from ..train.topic_training import format_topics

    if ldavis is not None:
        docs_path = _documents_or_heldout(model_path, docs_path, "--docs", "documents to show")
        pyldavis = _import_pyldavis("--ldavis")
    elif docs_path is not None:
        warn(Errors.W473)
    model = load_topic_model(model_path)
    if history is None:
        typer.echo(format_topics(model, top))
        if plot is not None:
            warn(Errors.W474)
    elif _has_history(model, history, model_path):
        columns, rows = ranking_table(model, history, top)
        info(f"Ranks of topic {history}'s top {top} words, one column per ranking ({history_axis(model)})", err=True)
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
    if ldavis is not None:
        from ..topics.coherence import read_documents
        from ..topics.ldavis import pyldavis_data

        _write_ldavis_page(pyldavis, pyldavis_data(model, read_documents(docs_path)), ldavis)


def _documents_or_heldout(model_path: Path, given: Optional[Path], option: str, what: str) -> Path:
    """The documents file of `option`: the one given, else the held-out documents that
    `spacy-ag train` wrote next to MODEL."""
    if given is None:
        given = model_path.parent / "heldout.txt"
        if not given.exists():
            raise ValueError(Errors.E475.format(option=option, given=given, what=what))
    return require_input_file(given, f"{what} file")


def _import_pyldavis(option: str):
    try:
        import pyLDAvis
    except ImportError:
        raise ValueError(Errors.E476.format(option=option)) from None
    return pyLDAvis


def _write_ldavis_page(pyldavis, data, html: Path) -> None:
    """Render the pyLDAvis page of `pyldavis_data`'s `data` to `html`, atomically: self-contained
    (works offline), topics in our order and numbering (`offline_ldavis_page`), prepared in this
    process (pyLDAvis would otherwise start a joblib worker per core that outlives the call)."""
    from ..archive import write_atomic_file
    from ..topics.ldavis import offline_ldavis_page

    page, ours = offline_ldavis_page(pyldavis, data, title=f"spacy-ag topics: {html.stem}")
    write_atomic_file(html, page.encode("utf8"))
    good(f"Wrote the pyLDAvis page of {len(data['topic_term_dists'])} topics over {len(data['vocab'])} words "
         f"to {html} (self-contained; topics numbered from {0 if ours else 1})")
    if not ours:
        warn(Errors.W470.format(version=pyldavis.__version__))


@app.command("evaluate-topics")
@errors_as_lines
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
    """Topic coherence of the top words on a reference corpus, as gensim computes it (u_mass,
    c_npmi, c_v; docs/algorithms.md 5.4), and the held-out log likelihood per token. The add-one
    PMI and NPMI of --window are kept as a labelled extra."""
    from ..topics.coherence import ONE_WORD_TODO, coherence, read_documents, score_text, why_not_scored
    from ..topics.standard_coherence import MEASURES, WINDOWS, topic_coherences

    reference = _documents_or_heldout(model_path, reference, "--reference", "reference documents")
    model = load_topic_model(model_path)
    ref_docs = read_documents(reference)
    topics = model.topics(top)
    scores = coherence(topics, ref_docs, window=window, reference=str(reference))
    standard = topic_coherences(topics, ref_docs)
    scores.update({key: value for key, value in standard.items() if key not in scores})
    held = ref_docs if heldout is None else read_documents(require_input_file(heldout, "held-out file"))
    scores["heldout"] = model.heldout_loglik(held)
    info(f"Topics of {model_path} ({model.n_topics}), top {top} words, reference {reference}:")
    for measure in MEASURES:
        where = f"windows of {WINDOWS[measure]} tokens" if WINDOWS[measure] else "whole documents"
        typer.echo(f"{measure:<7} {score_text(scores[measure]):>6}   (as gensim computes it: {where})")
    if standard["missing_words"]:
        missing = standard["missing_words"]
        warn(Errors.W471.format(n_standard=len(missing), words=", ".join(missing[:10])))
    typer.echo(f"extra: add-one PMI {score_text(scores['pmi'])}, NPMI {score_text(scores['npmi'])} (windows of "
               f"{window}; not the field's measure, docs/algorithms.md 5.4)")
    if scores["pmi"] is None:
        warn(Errors.E206.format(path=reference, reason=why_not_scored(scores),
                                todo=ONE_WORD_TODO if scores["top_n"] < 2 else
                                "give a larger reference corpus with --reference FILE"))
    h = scores["heldout"]
    typer.echo(f"held-out log likelihood {h['loglik']:.1f} over {h['tokens']} tokens ({h['per_word']:.4f} per word)")
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(scores, indent=1, default=str) + "\n", encoding="utf8")


@app.command("tag-topics")
@errors_as_lines
def tag_topics_cli(
    model_path: Path = typer.Argument(..., metavar="MODEL", help="Topic model or pipeline directory"),
    input_path: str = typer.Argument(..., metavar="INPUT", help="Documents, one per line (tokens separated by "
                                                                "whitespace); - for stdin; or a directory of such "
                                                                "files (with --output DIR)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout (a "
                                                                       "directory for a directory INPUT)"),
    batch_size: int = typer.Option(500, "--batch-size", help="Documents per call", min=1),
    backend: str = typer.Option("local", "--backend", help=BACKEND_HELP),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    workers: int = typer.Option(0, "--workers", help=WORKERS_HELP, min=0),
    force: bool = typer.Option(False, "--force", "-F", help=FORCE_HELP),
) -> None:
    """Print the topics of each document of INPUT: its most probable topic, a tab, and its topic
    proportions E_q[theta] in topic order (4 decimals, separated by spaces); a blank line stays blank.

    A directory INPUT is tagged file by file into --output DIR, as for segment.
    """
    from ..annotation.tasks import TagTopics

    annotate_input("tag-topics", TagTopics(batch_size), lambda: load_topic_model(model_path), input_path, output,
              backend, ray_address, workers, force)


@app.command("export-ldavis")
@errors_as_lines
def export_ldavis_cli(
    model_path: Path = typer.Argument(..., metavar="MODEL", help="Topic model or pipeline directory"),
    docs_path: Path = typer.Argument(..., metavar="DOCS", help="Documents, one per line (tokens separated by "
                                                               "whitespace): the vocabulary and the proportions"),
    output: Path = typer.Option(..., "--output", "-o", help="JSON file of pyLDAvis.prepare's arguments"),
    html: Optional[Path] = typer.Option(None, "--html", help="Also render the pyLDAvis page here (pip install "
                                                             "'spacy-ag[ldavis]')"),
) -> None:
    """Write what pyLDAvis needs to show the topics: `pyLDAvis.prepare(**json.load(open(OUTPUT)))`.

    The vocabulary is the words of DOCS; each topic's row is its probability of those words,
    cached and spelled from characters, renormalised over them (spacy_ag.topics.ldavis).
    """
    from ..archive import write_atomic_file
    from ..topics.coherence import read_documents
    from ..topics.ldavis import pyldavis_data

    require_input_file(docs_path, "documents file")
    pyldavis = _import_pyldavis("--html") if html is not None else None
    model = load_topic_model(model_path)
    data = pyldavis_data(model, read_documents(docs_path))
    write_atomic_file(output, (json.dumps(data) + "\n").encode("utf8"))
    good(f"Wrote pyLDAvis data for {model.n_topics} topics and {len(data['vocab'])} words to {output}")
    if html is not None:
        _write_ldavis_page(pyldavis, data, html)
