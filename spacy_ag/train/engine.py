"""Engine configs ([grammar], [corpus], [sampler] or [online], [training]): MCMC, VB or online runs.

`train_model` writes OUTPUT/model (the model archive), OUTPUT/config.cfg (the
filled config), OUTPUT/trace.jsonl, OUTPUT/segmentation.txt,
OUTPUT/checkpoints/ and, when gold words are known, OUTPUT/scores.json.
Ctrl-C keeps the checkpoints; ``resume=True`` continues from them exactly,
after checking that the run is the one they belong to (`resume`).
"""
from __future__ import annotations

import json
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import typer

from ..config import TrainingConfig, build_model, load_training_config
from ..errors import Errors, TrainingLayerError
from .lock import interrupted, output_lock, stopped
from .progress import TraceLog, good, info, warn
from .inputs import require_file
from .resume import check_resume, record_run, run_fingerprint

PROG = "spacy-ag"


def sentence_gold(corpus, gold_utterances: Sequence[Sequence[str]], gold_name: str) -> List[List[str]]:
    """Gold words per parsed sentence (chunk) of `corpus`, from gold words per line.

    The trainer scores its samples sentence by sentence; with ``split_at`` a
    line is several sentences, so the gold words are cut at the chunk edges
    (a gold word that spans a split character is cut there, which only
    affects the running score in the trace, not the final scores). Raises a
    one-line ValueError if the gold file does not spell the training text.
    """
    pieces_per_line = corpus.pieces
    if len(gold_utterances) != len(pieces_per_line):
        raise ValueError(f"{gold_name} has {len(gold_utterances)} lines but {corpus.path} has "
                         f"{len(pieces_per_line)}; the gold file needs one line per training line")
    out: List[Optional[List[str]]] = [None] * len(corpus.sentences)
    for u, (pieces, words) in enumerate(zip(pieces_per_line, gold_utterances)):
        text = "".join(t for piece in pieces for t in piece.terminals)
        spelled = "".join(words)
        if text != spelled:
            line = corpus.utterance_lines[u]
            raise ValueError(f"{gold_name}:{line}: the gold words spell {spelled[:40]!r} but line {line} "
                             f"of {corpus.path} is {text[:40]!r}")
        cuts, pos = set(), 0
        for w in words:
            pos += len(w)
            cuts.add(pos)
        start = 0
        for piece in pieces:
            end = start + sum(len(t) for t in piece.terminals)
            if not piece.boundary:
                chunk_words, current, pos = [], [], start
                for t in piece.terminals:
                    current.append(t)
                    pos += len(t)
                    if pos in cuts or pos == end:
                        chunk_words.append("".join(current))
                        current = []
                out[piece.sentence] = chunk_words
            start = end
    return [w if w is not None else [] for w in out]



def _resume_command(config_path: Path, output: Path, extra_args: Sequence[str]) -> str:
    args = [PROG, "train", str(config_path), "--output", str(output)]
    args += [a for a in extra_args if a != "--resume"] + ["--resume"]
    return shlex.join(args)


@dataclass
class TrainingResult:
    model: Any
    output: Path
    segmentation: List[List[str]]
    scores: Optional[Dict[str, Any]]
    config: TrainingConfig


def train_model(config_path: Path, output: Optional[Path] = None, overrides: Optional[Dict[str, Any]] = None,
                *, resume: bool = False, command_args: Sequence[str] = (), show_scores: bool = True,
                interactive: Optional[bool] = None) -> TrainingResult:
    """Train as `spacy-ag train` does and write the output directory.

    OUTPUT/model (the saved AdaptorGrammar), OUTPUT/config.cfg (the filled
    config), OUTPUT/trace.jsonl, OUTPUT/segmentation.txt, OUTPUT/checkpoints/
    and, when gold words are known, OUTPUT/scores.json.
    """
    from ..corpus import read_corpus
    from ..evaluation import read_segmented

    config_path = Path(config_path)
    cfg = load_training_config(config_path, overrides or {})
    out = Path(output) if output is not None else cfg.output
    if out is None:
        raise TrainingLayerError(Errors.E030.format(path=config_path))
    if cfg.train_path is None:
        raise TrainingLayerError(Errors.E031.format(path=config_path))
    for what, file in (("corpus.path: training file", cfg.train_path), ("paths.gold: gold file", cfg.gold_path),
                       ("grammar.path: grammar file", cfg.grammar_path)):
        if file is not None:
            require_file(file, what, config_path)
    if out.exists() and not out.is_dir():
        raise TrainingLayerError(Errors.E033.format(path=out))
    checkpoints = out / "checkpoints"
    variational = cfg.inference != "mcmc"
    pattern = "online.npz" if variational else "chain-*.npz"
    if variational and cfg.stream:
        if resume:
            raise TrainingLayerError(Errors.E036)
        with output_lock(out):
            return _train_stream(cfg, out, config_path, show_scores)
    fingerprint = engine_fingerprint(cfg)
    if resume:
        check_resume(checkpoints, fingerprint, [pattern])

    model = build_model(cfg)
    corpus = read_corpus(cfg.train_path, mode=cfg.mode, gold=cfg.corpus_gold, split_at=cfg.split_at,
                         units=cfg.units)
    if not len(corpus):
        raise TrainingLayerError(Errors.E037.format(path=cfg.train_path))
    gold_utterances, gold_name = None, None
    if cfg.gold_path is not None:
        gold_utterances, gold_name = read_segmented(cfg.gold_path), str(cfg.gold_path)
    elif cfg.corpus_gold:
        gold_utterances, gold_name = corpus.gold_words, str(cfg.train_path)
    gold = sentence_gold(corpus, gold_utterances, gold_name) if gold_utterances is not None else None
    t = cfg.training
    if (t.eval_every or getattr(t, "eval_at", ())) and gold is None:
        warn("training.eval_every/eval_at is set but there are no gold words (paths.gold or corpus.gold); "
             "token F is not traced")

    with output_lock(out):  # one run per output directory; SIGTERM stops it like Ctrl-C
        _write_config(cfg, out)
        if not resume:
            record_run(checkpoints, fingerprint)
        adapted = ", ".join(f"{s} (a={ad.a:g}, b={ad.b:g})" for s, ad in model.grammar.adaptors.items())
        info(f"Grammar {cfg.grammar_path}: start {model.grammar.start}, adapted {adapted or 'none'}")
        info(f"Corpus {cfg.train_path}: {len(corpus.pieces)} lines, {len(corpus)} sentences, "
             f"{sum(len(s) for s in corpus.sentences)} terminals ({cfg.mode})"
             + (f", gold from {gold_name}" if gold_name else ""))
        if variational:
            o = cfg.online
            batch = len(corpus) if cfg.inference == "vb" else o.batch_size
            steps = o.passes * -(-len(corpus) // batch)
            info(f"{cfg.inference}: {o.passes} pass{'es' if o.passes > 1 else ''} of {steps // o.passes} "
                 f"minibatch{'es' if steps > o.passes else ''}, seed {t.seed}"
                 + (f", resuming from {checkpoints}" if resume else "") + f"; output {out}")
        else:
            steps = t.iterations
            info(f"{t.iterations} iterations x {t.chains} chain{'s' if t.chains > 1 else ''}, seed {t.seed}"
                 + (f", resuming from {checkpoints}" if resume else "") + f"; output {out}")

        if interactive is None:
            interactive = sys.stderr.isatty()
        log = TraceLog(out / "trace.jsonl", steps, 1 if variational else t.chains, append=resume,
                       interactive=interactive)
        started = time.time()
        try:
            with log:
                model.fit(corpus, iterations=t.iterations, chains=t.chains, seed=t.seed, burn_in=t.burn_in,
                          sample_every=t.sample_every, callback=log, checkpoint_dir=checkpoints,
                          checkpoint_every=t.checkpoint_every, resume=resume, workers=t.workers,
                          backend=t.backend, ray_address=t.ray_address,
                          gold=gold, eval_every=t.eval_every if gold is not None else 0,
                          **({"eval_at": t.eval_at} if getattr(t, "eval_at", ()) and gold is not None else {}))
        except KeyboardInterrupt as err:  # Ctrl-C or SIGTERM (`output_lock`, `spacy_ag.training`)
            done = ", ".join(f"chain {c} at iteration {i}" for c, i in sorted(log.last.items()))
            # without --resume, checkpoints left by an earlier run must not be offered for resuming
            usable = [p for p in checkpoints.glob(pattern) if resume or p.stat().st_mtime >= started - 1]
            if usable:
                raise stopped(f"{interrupted(err)}{' (' + done + ')' if done else ''}; checkpoints are in "
                              f"{checkpoints}; continue with: "
                              f"{_resume_command(config_path, out, command_args)}", err) from None
            raise stopped(f"{interrupted(err)} before the first checkpoint was written; nothing to resume",
                          err) from None

        model.save(out / "model")
        trace = sorted(model.trace, key=lambda line: (line.get("iteration", line.get("minibatch", 0)),
                                                      line.get("chain", 0)))
        write_text_atomic(out / "trace.jsonl", "".join(json.dumps(line) + "\n" for line in trace))
        segmentation = model.training_segmentation()
        return _finish(model, cfg, out, segmentation, gold_utterances, gold_name, show_scores)


def _finish(model, cfg: TrainingConfig, out: Path, segmentation, gold_utterances, gold_name,
            show_scores: bool) -> TrainingResult:
    """Write the segmentation and scores of a trained model, and say where everything is."""
    from ..evaluation import format_scores, segmentation_scores

    write_text_atomic(out / "segmentation.txt", "".join(" ".join(words) + "\n" for words in segmentation))
    scores = None
    if gold_utterances is not None:
        scores = segmentation_scores(segmentation, gold_utterances)
        if cfg.split_at:
            scores["without_punctuation"] = segmentation_scores(segmentation, gold_utterances,
                                                                exclude=cfg.split_at)
        write_text_atomic(out / "scores.json", json.dumps(scores, indent=2))
    good(f"Saved the model to {out / 'model'}")
    info(f"Training segmentation: {out / 'segmentation.txt'}; trace: {out / 'trace.jsonl'}")
    if scores is not None and show_scores:
        info(f"Scores of the training segmentation against {gold_name} ({out / 'scores.json'}):")
        typer.echo(format_scores(scores))
        if "without_punctuation" in scores:
            typer.echo("without punctuation tokens:")
            typer.echo(format_scores(scores["without_punctuation"]))
    return TrainingResult(model, out, segmentation, scores, cfg)


def _train_stream(cfg: TrainingConfig, out: Path, config_path: Path, show_scores: bool) -> TrainingResult:
    """Online training on a file read lazily, line by line, in `online.passes` passes.

    Only a shuffle window and one minibatch are held in memory; D is the
    number of parseable chunks, counted in a first streaming pass unless
    online.corpus_size gives it.
    """
    from ..corpus import iter_lines
    from ..evaluation import read_segmented

    model = build_model(cfg)
    o, t = cfg.online, cfg.training
    out.mkdir(parents=True, exist_ok=True)
    _write_config(cfg, out)

    def texts():  # a gold-segmented corpus trains and is segmented without its spaces
        return ("".join(text.split()) if cfg.corpus_gold else text for _, text in iter_lines(cfg.train_path))

    alphabet, lines = set(), 0  # one streaming pass: the terminals of [:corpus:] and D
    for text in texts():
        alphabet.update(model._terminals(text))
        lines += bool(text.strip())
    model.prepare_alphabet(alphabet)
    D = o.corpus_size or lines
    info(f"online, streaming {cfg.train_path}: {o.passes} pass{'es' if o.passes > 1 else ''} over about {D} "
         f"lines, minibatches of {o.batch_size}, seed {t.seed}; output {out}")
    log = TraceLog(out / "trace.jsonl", o.passes * -(-D // o.batch_size), 1, interactive=sys.stderr.isatty())
    with log:
        for p in range(o.passes):
            model.partial_fit(texts(), corpus_size=D, seed=t.seed + p, callback=log, pass_index=p,
                              shuffle_buffer=cfg.shuffle_buffer)
    model.save(out / "model")
    segmentation = [words for text in texts() for words in model.segment([text])]
    gold_utterances, gold_name = None, None
    if cfg.gold_path is not None:
        gold_utterances, gold_name = read_segmented(cfg.gold_path), str(cfg.gold_path)
    elif cfg.corpus_gold:
        gold_utterances, gold_name = [text.split() for _, text in iter_lines(cfg.train_path)], str(cfg.train_path)
    return _finish(model, cfg, out, segmentation, gold_utterances, gold_name, show_scores)


def write_text_atomic(path: Path, text: str) -> None:
    from ..archive import write_atomic_file

    write_atomic_file(path, text.encode("utf8"))


def _write_config(cfg: TrainingConfig, out: Path) -> None:
    """OUTPUT/config.cfg: the filled config, with the grammar path made absolute (the copy lives elsewhere)."""
    saved = cfg.config.copy()
    saved["grammar"]["path"] = str(cfg.grammar_path.resolve())
    write_text_atomic(out / "config.cfg", saved.to_str())


def engine_fingerprint(cfg: TrainingConfig) -> Dict[str, Any]:
    """The settings and files that decide an engine run's result (see `resume`)."""
    sections = {name: dict(values) for name, values in cfg.config.items() if name not in ("paths", "corpus")}
    sections["grammar"].pop("path", None)
    sections["corpus"] = {"gold": cfg.corpus_gold}
    if cfg.inference == "mcmc":
        sections.pop("online", None)
    else:
        sections.pop("sampler", None)
    return run_fingerprint(sections, {"grammar": cfg.grammar_path, "corpus": cfg.train_path})
