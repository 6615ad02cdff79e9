"""Engine configs ([grammar], [corpus], [sampler] or [online], [training]): MCMC, VB or online runs.

`train_model` writes OUTPUT/model (the model archive), OUTPUT/config.cfg (the
filled config), OUTPUT/trace.jsonl, OUTPUT/segmentation.txt,
OUTPUT/checkpoints/ and, when gold words are known, OUTPUT/scores.json.
Ctrl-C keeps the checkpoints; ``resume=True`` continues from them exactly,
after checking that the run is the one they belong to (`resume`).
"""
from __future__ import annotations

import hashlib
import json
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import typer

from ..config import TrainingConfig, build_model, load_training_config
from ..errors import Errors, TrainingLayerError
from .lock import interrupted, output_lock, stopped
from .progress import TraceLog, good, info, warn
from .foreign_output import ENGINE_OUTPUTS, refuse_foreign_output
from .inputs import check_gold_words, require_file
from .resume import check_resume, cut_trace, run_fingerprint, start_run

PROG = "spacy-ag"
#: Lines segmented per call when a streamed run writes its segmentation (memory stays that of one batch).
SEGMENT_BATCH = 512


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
        raise ValueError(Errors.E499.format(gold_name=gold_name, n_gold_utterances=len(gold_utterances),
                                            path=corpus.path, n_pieces_per_line=len(pieces_per_line)))
    out: List[Optional[List[str]]] = [None] * len(corpus.sentences)
    for u, (pieces, words) in enumerate(zip(pieces_per_line, gold_utterances)):
        text = "".join(t for piece in pieces for t in piece.terminals)
        spelled = "".join(words)
        if text != spelled:
            line = corpus.utterance_lines[u]
            raise ValueError(Errors.E501.format(gold_name=gold_name, line=line, spelled=spelled[:40], path=corpus.path,
                                                text=text[:40]))
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



#: How to read wordseg's tagged text, for the line (E150) that finds it in a file read otherwise.
TAGS_FIX = 'read it with corpus.format = "wordseg-tags" (--corpus.format wordseg-tags)'
GOLD_TAGS_FIX = ("give the gold words separated by spaces (wordseg-prep --gold writes them), or train on the "
                 'tagged file with corpus.format = "wordseg-tags": its ;eword words are the gold words')


def wordseg_training_lines(cfg: TrainingConfig) -> Iterator[Tuple[str, Optional[List[str]]]]:
    """``(text, gold words or None)`` of every line of a corpus in one of wordseg's formats: the units
    separated by spaces (grammar.mode = "tokens": every unit a terminal) or joined ("chars")."""
    from ..input_formats import joined_units, wordseg_utterances

    fix = 'set grammar.mode = "tokens" to keep every unit one terminal'
    for number, utterance in wordseg_utterances(cfg.train_path, cfg.corpus_format):
        if cfg.mode == "tokens":
            text = " ".join(utterance.units)
        else:
            text = joined_units(utterance.units, cfg.units, cfg.train_path, number, 'grammar.mode = "chars"', fix)
        yield text, utterance.words


def reject_tagged_text(cfg: TrainingConfig) -> None:
    """A corpus of format "text" that looks like wordseg's tagged text stops the run (E150)."""
    from ..input_formats import reject_wordseg_tags

    expected = ("gold-segmented text (corpus.gold = true)" if cfg.corpus_gold
                else 'plain text (corpus.format = "text")')
    reject_wordseg_tags(cfg.train_path, expected, TAGS_FIX)


def training_corpus(cfg: TrainingConfig):
    """The training text of an engine config as a `Corpus`, and the gold words of its lines (None
    when the file has none: plain text without corpus.gold, or wordseg's prepared text)."""
    from ..corpus import read_corpus

    if cfg.corpus_format == "text":
        reject_tagged_text(cfg)
        corpus = read_corpus(cfg.train_path, mode=cfg.mode, gold=cfg.corpus_gold, split_at=cfg.split_at,
                             units=cfg.units)
        return corpus, corpus.gold_words
    texts, gold = [], []
    for text, words in wordseg_training_lines(cfg):
        texts.append(text)
        gold.append(words)
    corpus = read_corpus(texts, mode=cfg.mode, split_at=cfg.split_at, source=str(cfg.train_path), units=cfg.units)
    return corpus, gold if cfg.corpus_format == "wordseg-tags" else None


def _resume_command(config_path: Path, output: Path, extra_args: Sequence[str]) -> str:
    args = [PROG, "train", str(config_path), "--output", str(output)]
    args += [a for a in extra_args if a != "--resume"] + ["--resume"]
    return shlex.join(args)


@dataclass
class TrainingResult:
    model: Any
    output: Path
    segmentation: Optional[List[List[str]]]  # None for a streamed run: it is in OUTPUT/segmentation.txt
    scores: Optional[Dict[str, Any]]
    config: TrainingConfig


def train_model(config_path: Path, output: Optional[Path] = None, overrides: Optional[Dict[str, Any]] = None,
                *, resume: bool = False, command_args: Sequence[str] = (), show_scores: bool = True,
                interactive: Optional[bool] = None, force: bool = False) -> TrainingResult:
    """Train as `spacy-ag train` does and write the output directory.

    OUTPUT/model (the saved AdaptorGrammar), OUTPUT/config.cfg (the filled
    config), OUTPUT/trace.jsonl, OUTPUT/segmentation.txt, OUTPUT/checkpoints/
    and, when gold words are known, OUTPUT/scores.json. An existing OUTPUT
    that spacy-ag did not write is refused unless `force` (`foreign_output`).
    """
    from ..input_formats import read_gold_words

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
    fingerprint = engine_fingerprint(cfg)
    if resume:
        check_resume(checkpoints, fingerprint, [pattern])
    refuse_foreign_output(out, force, ENGINE_OUTPUTS)
    if variational and cfg.stream:
        return _train_stream(cfg, out, config_path, fingerprint, resume=resume, command_args=command_args,
                             show_scores=show_scores, interactive=interactive)

    model = build_model(cfg)
    corpus, corpus_gold = training_corpus(cfg)
    if not len(corpus):
        raise TrainingLayerError(Errors.E037.format(path=cfg.train_path))
    gold_utterances, gold_name = None, None
    if cfg.gold_path is not None:
        gold_utterances, gold_name = read_gold_words(cfg.gold_path, fix=GOLD_TAGS_FIX), str(cfg.gold_path)
    elif corpus_gold is not None:
        gold_utterances, gold_name = corpus_gold, str(cfg.train_path)
    if gold_utterances is not None and (cfg.gold_path is not None or cfg.corpus_gold):  # E170, E171: unsegmented
        check_gold_words(gold_utterances, gold_name, in_corpus=cfg.gold_path is None)
    gold = sentence_gold(corpus, gold_utterances, gold_name) if gold_utterances is not None else None
    t = cfg.training
    if (t.eval_every or getattr(t, "eval_at", ())) and gold is None:
        warn(Errors.W500)

    with output_lock(out):  # one run per output directory; SIGTERM stops it like Ctrl-C
        _write_config(cfg, out)
        if resume:
            _trace_until_checkpoints(out / "trace.jsonl", checkpoints, pattern, fingerprint)
        else:
            start_run(checkpoints, fingerprint)
        adapted = ", ".join(f"{s} (a={ad.a:g}, b={ad.b:g})" for s, ad in model.grammar.adaptors.items())
        info(f"Grammar {cfg.grammar_path}: start {model.grammar.start}, adapted {adapted or 'none'}")
        info(f"Corpus {cfg.train_path}: {len(corpus.pieces)} lines, {len(corpus)} sentences, "
             f"{sum(len(s) for s in corpus.sentences)} terminals ({cfg.mode}"
             + (f", read as {cfg.corpus_format}" if cfg.corpus_format != "text" else "") + ")"
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
                          backend=t.backend, ray_address=t.ray_address, run=fingerprint,
                          gold=gold, eval_every=t.eval_every if gold is not None else 0,
                          **({"eval_at": t.eval_at} if getattr(t, "eval_at", ()) and gold is not None else {}))
        except KeyboardInterrupt as err:  # Ctrl-C or SIGTERM (`output_lock`, `spacy_ag.runs.chain_pool`)
            done = ", ".join(f"chain {c} at iteration {i}" for c, i in sorted(log.last.items()))
            raise _stopped_run(err, done, checkpoints, pattern, resume, started, config_path, out,
                               command_args) from None

        model.save(out / "model")
        trace = sorted(model.trace, key=lambda line: (line.get("iteration", line.get("minibatch", 0)),
                                                      line.get("chain", 0)))
        write_text_atomic(out / "trace.jsonl", "".join(json.dumps(line) + "\n" for line in trace))
        segmentation = model.training_segmentation()
        return _finish(model, cfg, out, segmentation, gold_utterances, gold_name, show_scores)


def _stopped_run(err: BaseException, done: str, checkpoints: Path, pattern: str, resume: bool, started: float,
                 config_path: Path, out: Path, command_args: Sequence[str]):
    """The one-line stop of an interrupted run: where its checkpoints are and the command that resumes it."""
    # without --resume, checkpoints left by an earlier run must not be offered for resuming
    usable = [p for p in checkpoints.glob(pattern) if resume or p.stat().st_mtime >= started - 1]
    if usable:
        return stopped(f"{interrupted(err)}{' (' + done + ')' if done else ''}; checkpoints are in "
                       f"{checkpoints}; continue with: {_resume_command(config_path, out, command_args)}", err)
    return stopped(f"{interrupted(err)} before the first checkpoint was written; nothing to resume", err)


def write_segmentation(path: Path, segmentation: Iterable[Sequence[str]],
                       gold: Optional[Iterable[Sequence[str]]] = None, gold_name: str = "gold",
                       exclude: str = "") -> Optional[Dict[str, Any]]:
    """Write one line of words per utterance to `path`, atomically, and score them against `gold`.

    Both are consumed one utterance at a time, so a streamed corpus is
    written and scored in constant memory (`SegmentationCounts`). Returns
    the scores (with ``without_punctuation`` when `exclude` is given), or
    None without gold. Gold that does not match (another number of lines,
    other text) raises ValueError after the segmentation is written whole.
    """
    from ..archive import atomic_writer
    from ..evaluation import SegmentationCounts

    tallies = []
    if gold is not None:
        tallies = [SegmentationCounts()] + ([SegmentationCounts(exclude)] if exclude else [])
        gold = iter(gold)
    mismatch = None
    with atomic_writer(path, text=True) as f:
        for n, words in enumerate(segmentation, 1):
            f.write(" ".join(words) + "\n")
            if not tallies or mismatch:
                continue
            gold_words = next(gold, None)
            if gold_words is None:
                mismatch = f"{gold_name} has {n - 1} lines but the training text has more"
                continue
            try:
                for tally in tallies:
                    tally.add(words, gold_words)
            except ValueError as err:
                mismatch = f"{gold_name}: {err}"
    if tallies and not mismatch and next(gold, None) is not None:
        mismatch = f"{gold_name} has more lines than the training text ({tallies[0].n_utterances})"
    if mismatch:
        raise ValueError(mismatch)
    if not tallies:
        return None
    scores = tallies[0].scores()
    if exclude:
        scores["without_punctuation"] = tallies[1].scores()
    return scores


def _finish(model, cfg: TrainingConfig, out: Path, segmentation, gold_utterances, gold_name,
            show_scores: bool) -> TrainingResult:
    """Write the segmentation and scores of a trained model, and say where everything is.

    `segmentation` and `gold_utterances` may be generators (a streamed run):
    they are consumed once, and the result then holds no segmentation.
    """
    from ..evaluation import format_scores

    scores = write_segmentation(out / "segmentation.txt", segmentation, gold_utterances, gold_name or "gold",
                                cfg.split_at)
    if scores is not None:
        write_text_atomic(out / "scores.json", json.dumps(scores, indent=2))
    good(f"Saved the model to {out / 'model'}")
    info(f"Training segmentation: {out / 'segmentation.txt'}; trace: {out / 'trace.jsonl'}")
    if scores is not None and show_scores:
        info(f"Scores of the training segmentation against {gold_name} ({out / 'scores.json'}):")
        typer.echo(format_scores(scores))
        if "without_punctuation" in scores:
            typer.echo("without punctuation tokens:")
            typer.echo(format_scores(scores["without_punctuation"]))
    return TrainingResult(model, out, segmentation if isinstance(segmentation, list) else None, scores, cfg)


def _train_stream(cfg: TrainingConfig, out: Path, config_path: Path, fingerprint: Dict[str, Any], *,
                  resume: bool, command_args: Sequence[str], show_scores: bool,
                  interactive: Optional[bool]) -> TrainingResult:
    """Online training on a file read lazily, line by line, in `online.passes` passes.

    Only a shuffle window and one minibatch are held in memory; D is the
    number of lines, counted in a first streaming pass (which also finds the
    terminals of `[:corpus:]`) unless online.corpus_size gives it. A file can
    be read again, so the run checkpoints and resumes like an in-memory one
    (`AdaptorGrammar.fit_stream`); the segmentation and its scores are then
    written line by line (`write_segmentation`).
    """
    from ..corpus import iter_lines
    from ..evaluation import iter_segmented

    model = build_model(cfg)
    o, t = cfg.online, cfg.training
    checkpoints = out / "checkpoints"
    if cfg.corpus_format == "text":
        reject_tagged_text(cfg)
    if cfg.gold_path is not None:  # unsegmented text read as gold stops here (E170, E171), before training
        check_gold_words((words for _, words in iter_segmented(cfg.gold_path)), cfg.gold_path, in_corpus=False)
    elif cfg.corpus_gold and cfg.corpus_format == "text":
        check_gold_words((text.split() for _, text in iter_lines(cfg.train_path)), cfg.train_path, in_corpus=True)

    def texts():  # a gold-segmented corpus trains and is segmented without its spaces
        if cfg.corpus_format != "text":
            return (text for text, _ in wordseg_training_lines(cfg))
        return ("".join(text.split()) if cfg.corpus_gold else text for _, text in iter_lines(cfg.train_path))

    with output_lock(out):
        _write_config(cfg, out)
        if resume:
            _trace_until_checkpoints(out / "trace.jsonl", checkpoints, "online.npz", fingerprint)
        else:
            start_run(checkpoints, fingerprint)
        alphabet, lines = set(), 0  # one streaming pass: the terminals of [:corpus:] and D
        for text in texts():
            alphabet.update(model._terminals(text))
            lines += bool(text.strip())
        model.prepare_alphabet(alphabet)
        D = o.corpus_size or lines
        info(f"online, streaming {cfg.train_path}: {o.passes} pass{'es' if o.passes > 1 else ''} over about {D} "
             f"lines, minibatches of {o.batch_size}, seed {t.seed}"
             + (f", resuming from {checkpoints}" if resume else "") + f"; output {out}")
        log = TraceLog(out / "trace.jsonl", o.passes * -(-D // o.batch_size), 1, append=resume,
                       interactive=sys.stderr.isatty() if interactive is None else interactive)
        started = time.time()
        try:
            with log:
                model.fit_stream(texts, passes=o.passes, corpus_size=D, seed=t.seed, callback=log,
                                 shuffle_buffer=cfg.shuffle_buffer, checkpoint_dir=checkpoints,
                                 checkpoint_every=t.checkpoint_every, resume=resume, backend=t.backend,
                                 ray_address=t.ray_address, workers=t.workers, run=fingerprint,
                                 fingerprint=hashlib.sha256(json.dumps(fingerprint, sort_keys=True)
                                                            .encode("utf8")).hexdigest())
        except KeyboardInterrupt as err:
            raise _stopped_run(err, f"minibatch {model.progress.get('minibatches', 0)}", checkpoints,
                               "online.npz", resume, started, config_path, out, command_args) from None
        model.save(out / "model")
        segmentation = segment_lines(model, texts())
        gold_utterances, gold_name = None, None
        if cfg.gold_path is not None:
            from ..input_formats import reject_wordseg_tags

            reject_wordseg_tags(cfg.gold_path, "gold words separated by spaces", GOLD_TAGS_FIX)
            gold_utterances, gold_name = (words for _, words in iter_segmented(cfg.gold_path)), str(cfg.gold_path)
        elif cfg.corpus_format == "wordseg-tags":
            gold_utterances, gold_name = (words for _, words in wordseg_training_lines(cfg)), str(cfg.train_path)
        elif cfg.corpus_gold and cfg.corpus_format == "text":
            gold_utterances, gold_name = (text.split() for _, text in iter_lines(cfg.train_path)), str(cfg.train_path)
        return _finish(model, cfg, out, segmentation, gold_utterances, gold_name, show_scores)


def segment_lines(model, texts: Iterable[str]) -> Iterator[List[str]]:
    """The words of each text, segmented `SEGMENT_BATCH` texts at a time: a file of any size in the
    memory of one batch."""
    from ..corpus import chunked

    for batch in chunked(texts, SEGMENT_BATCH):
        yield from model.segment(batch)


def _trace_until_checkpoints(trace: Path, checkpoints: Path, pattern: str, fingerprint: Dict[str, Any]) -> None:
    """Drop from trace.jsonl the lines after the checkpoints a run resumes from (per chain: its
    iteration; variational: its minibatch), once every checkpoint is known to be this run's
    (E180): the resumed run writes those lines again, so the file reads as that of an
    uninterrupted run."""
    from ..archive import read_checkpoint_file
    from ..serialize import check_run

    reached, key = {}, "iteration"
    for path in sorted(checkpoints.glob(pattern)):
        meta = read_checkpoint_file(path, "checkpoint")[1]
        check_run(path, meta.get("run"), fingerprint)
        if meta.get("mode") == "variational":
            key, reached[0] = "minibatch", int(meta["progress"]["minibatches"])
        else:
            reached[int(meta["chain"])] = int(meta["iteration"])
    cut_trace(trace, key, reached)


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
    if cfg.corpus_format != "text":  # runs of plain text keep the fingerprint they had before formats existed
        sections["corpus"]["format"] = cfg.corpus_format
    if cfg.inference == "mcmc" and cfg.sampler.init != "online":  # else the online pass starts the chains
        sections.pop("online", None)
    else:
        sections.pop("sampler", None)
    return run_fingerprint(sections, {"grammar": cfg.grammar_path, "corpus": cfg.train_path})
