"""Topic configs (a [topics] section): Gibbs sweeps or online passes over documents, with checkpoints and resume.

`train_topics` holds out `corpus.heldout_fraction` of the documents, trains
`TopicModel` on the rest by `topics.sweeps` collapsed Gibbs sweeps (the
rankings of the top words kept every `topics.history_every` sweeps) or, with
``inference = "online"``, in `topics.passes` passes (each in its own shuffled
order), and writes OUTPUT/model (the model archive), OUTPUT/config.cfg,
OUTPUT/trace.jsonl, OUTPUT/heldout.txt and OUTPUT/scores.json (coherence of
the top words on the held-out documents and their likelihood).

Every `training.checkpoint_every` minibatches, and on Ctrl-C, the model is
written to OUTPUT/checkpoints/topics (a model archive). Its minibatch count
says where the run stands (pass and position), since every pass's order and
every document's random stream derive from the seed, so ``--resume``
continues to exactly the model of an uninterrupted run. Both checkpoints record
the run's fingerprint and continue only that run (`resume`).
"""
from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import typer

from ..config import load_topic_config
from ..errors import Errors, TrainingLayerError
from .engine import write_text_atomic
from .lock import interrupted, output_lock, stopped
from .progress import TraceLog, good, info, warn
from .foreign_output import TOPIC_OUTPUTS, refuse_foreign_output
from .inputs import require_file
from .resume import check_resume, cut_trace, run_fingerprint, start_run

__all__ = ["TopicTrainingResult", "format_topics", "train_topics"]

CHECKPOINT = "topics"
#: The Gibbs sampler's checkpoint (inference = "gibbs"), every checkpoint_every sweeps.
GIBBS_CHECKPOINT = "gibbs.npz"


@dataclass
class TopicTrainingResult:
    model: Any
    output: Path
    scores: Optional[Dict[str, Any]]


def format_topics(model, top: int) -> str:
    lines = []
    for i in range(model.n_topics):
        words = model.top_words(i, top)
        lines.append(f"topic {i:>2}  " + "  ".join(f"{w} {p:.3f}" for w, p in words))
    return "\n".join(lines)


def _split(docs: List[List[str]], fraction: float, seed: int):
    order = list(range(len(docs)))
    random.Random(seed).shuffle(order)
    n_held = int(round(fraction * len(docs)))
    return [docs[i] for i in order[n_held:]], [docs[i] for i in order[:n_held]]


def train_topics(config_path: Path, output: Optional[Path] = None, overrides: Optional[Mapping[str, Any]] = None,
                 *, resume: bool = False, show_topics: bool = True, force: bool = False) -> TopicTrainingResult:
    """Train a topic config as ``spacy-ag train`` does and write the output directory (an existing one
    that spacy-ag did not write only with `force`: `foreign_output`)."""
    from ..topics.coherence import ONE_WORD_TODO, coherence, read_documents, score_text, why_not_scored

    config_path = Path(config_path)
    v = load_topic_config(config_path, overrides)
    out = Path(output) if output is not None else (Path(v["paths"].output) if v["paths"].output else None)
    if out is None:
        raise TrainingLayerError(Errors.E030.format(path=config_path))
    if not v["corpus"].path:
        raise TrainingLayerError(Errors.E031.format(path=config_path))
    corpus = Path(v["corpus"].path)
    require_file(corpus, "corpus.path: documents file", config_path)
    if out.exists() and not out.is_dir():
        raise TrainingLayerError(Errors.E033.format(path=out))
    t, run = v["topics"], v["training"]
    checkpoints = out / "checkpoints"
    fingerprint = run_fingerprint({"topics": dataclasses.asdict(t), "online": dataclasses.asdict(v["online"]),
                                   "corpus": {"heldout_fraction": v["corpus"].heldout_fraction},
                                   "training": {"seed": run.seed}}, {"corpus": corpus})
    if resume:
        check_resume(checkpoints, fingerprint, [GIBBS_CHECKPOINT if t.inference == "gibbs" else CHECKPOINT])
    refuse_foreign_output(out, force, TOPIC_OUTPUTS)
    docs = read_documents(corpus)
    train, held = _split(docs, v["corpus"].heldout_fraction, run.seed)
    if not train:
        raise TrainingLayerError(Errors.E037.format(path=corpus))
    train_with = _gibbs if t.inference == "gibbs" else _online
    with output_lock(out):  # one run per output directory; SIGTERM stops it like Ctrl-C
        write_text_atomic(out / "config.cfg", v["config"].to_str())
        if not resume:
            start_run(checkpoints, fingerprint)
        model = train_with(t, v["online"], train, held, corpus, run, checkpoints, resume, config_path, out,
                           fingerprint)
        model.save(out / "model")
        if held:  # the default reference corpus of `spacy-ag evaluate-topics OUTPUT/model`
            write_text_atomic(out / "heldout.txt", "".join(" ".join(d) + "\n" for d in held))
        good(f"Saved the topic model to {out / 'model'}")
        if show_topics:
            typer.echo(format_topics(model, t.top_words))
        scores = None
        if held:
            scores = coherence(model.topics(t.top_words), held, reference=f"{len(held)} held-out documents")
            scores["heldout"] = model.heldout_loglik(held)
            write_text_atomic(out / "scores.json", json.dumps(scores, indent=1) + "\n")
            info(f"coherence on the held-out documents: PMI {score_text(scores['pmi'])}, NPMI "
                 f"{score_text(scores['npmi'])}; held-out log likelihood {scores['heldout']['per_word']:.4f} per "
                 f"word ({out / 'scores.json'})")
            if scores["pmi"] is None:
                todo = "the model is saved; " + (ONE_WORD_TODO if scores["top_n"] < 2 else (
                    "to score its coherence, hold out more documents (corpus.heldout_fraction) or give others: "
                    f"spacy-ag evaluate-topics {out / 'model'} --reference FILE"))
                warn(Errors.E206.format(path=out / "heldout.txt", reason=why_not_scored(scores), todo=todo))
        return TopicTrainingResult(model, out, scores)


def _new_model(t, online):
    from ..topics import TopicModel

    return TopicModel(t.n_topics, alpha=t.alpha, a=t.a, b=t.b, online=online, local_iterations=t.local_iterations,
                      units=t.units, inference=t.inference, sweeps=t.sweeps, alpha_every=t.alpha_every,
                      sample_b=t.sample_b, word_adapted=t.word_adapted, history_every=t.history_every,
                      history_size=t.history_size)


def _online(t, online, train, held, corpus, run, checkpoints: Path, resume: bool, config_path, out, fingerprint):
    """Online passes, a checkpoint every `checkpoint_every` minibatches."""
    from ..topics import TopicModel

    B = online.batch_size
    per_pass = -(-len(train) // B)
    if resume:
        model = TopicModel.load_checkpoint(checkpoints / CHECKPOINT, fingerprint)
        done = model.learner.minibatches
        cut_trace(out / "trace.jsonl", "minibatch", {0: done})
    else:
        model = _new_model(t, online)
        model.prepare(model.alphabet(train), sum(len(d) for d in train))
        done = 0
    info(f"{len(train)} training and {len(held)} held-out documents from {corpus}; {t.n_topics} topics, "
         f"{t.passes} pass{'es' if t.passes > 1 else ''} of {per_pass} minibatches of {B}"
         + (f", resuming after minibatch {done}" if resume else ""))
    with TraceLog(out / "trace.jsonl", t.passes * per_pass, 1, append=resume, interactive=False) as log:
        try:
            _passes(model, train, t.passes, run.seed, done, run.checkpoint_every, checkpoints / CHECKPOINT, log,
                    fingerprint)
        except KeyboardInterrupt as err:  # Ctrl-C or SIGTERM (`output_lock`)
            model.save_checkpoint(checkpoints / CHECKPOINT, fingerprint)
            raise stopped(f"{interrupted(err)} after minibatch {model.learner.minibatches}; the checkpoint is in "
                          f"{checkpoints}; continue with: spacy-ag train {config_path} --output {out} "
                          "--resume", err) from None
    return model


def _gibbs(t, online, train, held, corpus, run, checkpoints: Path, resume: bool, config_path, out, fingerprint):
    """Collapsed Gibbs sweeps, a checkpoint every `checkpoint_every` sweeps."""
    from ..archive import read_checkpoint_file
    from ..serialize import check_run
    from ..topics.gibbs import CHECKPOINT_KIND

    if resume:  # this run's checkpoint (E180), then the trace of its sweeps only
        meta = read_checkpoint_file(checkpoints / GIBBS_CHECKPOINT, CHECKPOINT_KIND)[1]
        check_run(checkpoints / GIBBS_CHECKPOINT, meta.get("run"), fingerprint)
        cut_trace(out / "trace.jsonl", "iteration", {0: int(meta["sweep"])})
    model = _new_model(t, online)
    info(f"{len(train)} training and {len(held)} held-out documents from {corpus}; {t.n_topics} topics, "
         f"{t.sweeps} Gibbs sweeps" + (", resuming from the last checkpoint" if resume else ""))
    with TraceLog(out / "trace.jsonl", t.sweeps, 1, append=resume, interactive=False) as log:
        try:
            model.fit_gibbs(train, seed=run.seed, callback=log, checkpoint=checkpoints / GIBBS_CHECKPOINT,
                            checkpoint_every=run.checkpoint_every, resume=resume, run=fingerprint)
        except KeyboardInterrupt as err:  # Ctrl-C or SIGTERM (`output_lock`)
            raise stopped(f"{interrupted(err)}; the last checkpoint (every {run.checkpoint_every} sweeps) is in "
                          f"{checkpoints}; continue with: spacy-ag train {config_path} --output {out} --resume",
                          err) from None
    return model


def _passes(model, train, passes: int, seed: int, done: int, checkpoint_every: int, checkpoint: Path,
            log, fingerprint) -> None:
    """The passes of `TopicModel.fit`, from minibatch `done` on, checkpointing on the way."""
    B = model.online.batch_size
    per_pass = -(-len(train) // B)
    for p in range(done // per_pass, passes):
        order = model.pass_order(len(train), seed, p)
        skip = (done - p * per_pass) * B if p == done // per_pass else 0
        docs = [train[i] for i in order[skip:]]
        for batch in model.minibatches(docs):
            model.step(batch, seed=seed + p, corpus_size=len(train), callback=log)
            if checkpoint_every and model.learner.minibatches % checkpoint_every == 0:
                model.save_checkpoint(checkpoint, fingerprint)
