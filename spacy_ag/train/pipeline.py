"""spaCy pipeline configs (an [nlp] section): trained exactly as ``spacy train`` trains them.

`train_pipeline` runs spaCy's own steps, in spaCy's order: the config read
with its overrides, `spacy.training.initialize.init_nlp` (which fits the
segmenter and the ag_parser components in their ``initialize``, with the
sampler settings of their own configs) and spaCy's training loop
(`spacy.training.loop.train`), which writes OUTPUT/model-last and
OUTPUT/model-best. So ``spacy train CONFIG`` and ``spacy-ag train CONFIG``
give the same model for the same seed. What spacy-ag adds is only shown or
written beside it: the sampler's progress, OUTPUT/trace.jsonl (one line per
iteration, chain and component), OUTPUT/scores.json (token, boundary and
lexicon scores on the dev data) and the fits in ``meta.json``.

`evaluate_pipeline` scores a trained pipeline on gold data for ``spacy-ag evaluate``.
"""
from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import typer

from ..archive import naming_failed_write, write_atomic_file
from ..components.fitting import FitObserver, observe_fitting
from ..config import load_pipeline_config, one_line
from ..errors import ConfigError, Errors, TrainingLayerError
from .foreign_output import PIPELINE_OUTPUTS, refuse_foreign_output
from .inputs import check_jsonl, require_file
from .lock import output_lock
from .progress import TraceLog, good, info, warn

__all__ = ["PipelineTrace", "PipelineTrainingResult", "SCORE_ROWS", "evaluate_pipeline", "format_pipeline_scores",
           "gold_examples", "train_pipeline"]

PathLike = Union[str, Path]

#: Rows of the score table: (label, key prefix).
SCORE_ROWS = (("token", "token"), ("boundary", "boundary"), ("lexicon", "lexicon"))


class PipelineTrace(FitObserver):
    """The observer `train_pipeline` installs: a progress bar and trace.jsonl per fit."""

    def __init__(self, path: Path, *, interactive: bool) -> None:
        super().__init__()
        self.path = path
        self.interactive = interactive
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf8")  # one trace per run; every fit appends to it

    @contextlib.contextmanager
    def fitting(self, component: str, *, grammar: str, iterations: int, chains: int, seed: int,
                texts: int) -> Iterator:
        info(f"Fitting {component} ({grammar} grammar) on {texts} texts: {iterations} iterations x "
             f"{chains} chain{'s' if chains > 1 else ''}, seed {seed}", err=True)
        log = TraceLog(self.path, iterations, chains, append=True, interactive=self.interactive, label=component)
        with log, super().fitting(component, grammar=grammar, iterations=iterations, chains=chains, seed=seed,
                                  texts=texts):
            def callback(line: Dict[str, Any]) -> None:
                log({**line, "component": component})

            yield callback
        good(f"Fitted {component} in {self.fits[-1]['seconds']:.1f}s", err=True)


@dataclass
class PipelineTrainingResult:
    nlp: Any
    output: Path
    model_dir: Path
    scores: Optional[Dict[str, Any]]
    fits: List[Dict[str, Any]] = field(default_factory=list)


def _corpus_path(config: Mapping[str, Any], dot_name: str) -> Optional[Any]:
    node: Any = config
    for part in dot_name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node.get("path") if isinstance(node, Mapping) else None


#: spaCy's JSONL reader, and ours that also reads plain text and wordseg's formats (its superset of keys).
JSONL_READER, TEXT_READER = "spacy.JsonlCorpus.v1", "spacy-ag.TextCorpus.v1"


def _check_corpora(config: Mapping[str, Any], config_path: Path) -> List[str]:
    """Clear one-line errors for the usual mistakes before spaCy sees the corpora.

    RETURNS (List[str]): The dotted names of the corpora that name spaCy's
        JSONL reader but whose file is plain text: `train_pipeline` reads them
        with `TEXT_READER` instead (spaCy's reader would fail on every line).
    """
    from ..input_formats import resolve_text_format
    from ..settings import TEXT_CORPUS_FORMATS

    training = config.get("training", {})
    train_name = training.get("train_corpus", "corpora.train")
    dev_name = training.get("dev_corpus", "corpora.dev")
    if _corpus_path(config, train_name) is None and "path" in _section(config, train_name):
        raise ConfigError(Errors.E506.format(config_path=config_path, train_name=train_name))
    plain: List[str] = []
    for name in (train_name, dev_name):
        path = _corpus_path(config, name)
        if path is None:
            continue
        section = _section(config, name)
        reader = str(section.get("@readers", ""))
        if Path(path).is_dir() and reader == "spacy.Corpus.v1":
            continue  # a folder of DocBins is what spacy.Corpus.v1 reads
        require_file(Path(path), f"[{name}] path", config_path)
        declared = str(section.get("format", "auto")) if reader == TEXT_READER else "jsonl"
        if reader == JSONL_READER and resolve_text_format(path) == "text":
            plain.append(name)
        elif declared in TEXT_CORPUS_FORMATS and reader in (JSONL_READER, TEXT_READER) \
                and resolve_text_format(path, declared) == "jsonl":
            check_jsonl(Path(path))
    if training.get("max_epochs") == -1:
        raise ConfigError(Errors.E507.format(config_path=config_path))
    return plain


def _read_plain_text(config, names: Sequence[str]) -> None:
    """Point the corpora `names` of the (raw) `config` at `TEXT_READER`, which takes spaCy's JSONL
    reader's keys, so that the file is read as the plain text it is; one info line each."""
    for name in names:
        node = config
        for part in name.split("."):
            node = node[part]
        node["@readers"] = TEXT_READER
        info(f"[{name}] path is plain text, not JSONL: read with {TEXT_READER} instead of {JSONL_READER} (set it in "
             "the config for `spacy train`)")


def _section(config: Mapping[str, Any], dot_name: str) -> Mapping[str, Any]:
    node: Any = config
    for part in dot_name.split("."):
        node = node.get(part, {}) if isinstance(node, Mapping) else {}
    return node if isinstance(node, Mapping) else {}


def format_pipeline_scores(scores: Mapping[str, Any]) -> str:
    """A P/R/F table of token, boundary and lexicon scores (missing values as -)."""
    width = max(len(label) for label, _ in SCORE_ROWS)
    out = [f"{'':<{width}}  {'P':>6}  {'R':>6}  {'F':>6}"]
    for label, key in SCORE_ROWS:
        cells = []
        for m in "prf":
            value = scores.get(f"{key}_{m}")
            cells.append(f"{value:6.4f}" if isinstance(value, (int, float)) else f"{'-':>6}")
        out.append(f"{label:<{width}}  " + "  ".join(cells))
    return "\n".join(out)


def _dev_examples(nlp) -> List:
    """The dev corpus, resolved as spaCy's loop resolves it."""
    from spacy import util
    from spacy.schemas import ConfigSchemaTraining

    filled = nlp.config.interpolate()
    T = util.registry.resolve(filled["training"], schema=ConfigSchemaTraining)
    return list(util.resolve_dot_names(filled, [T["dev_corpus"]])[0](nlp))


def train_pipeline(config_path: PathLike, output: PathLike, overrides: Optional[Mapping[str, Any]] = None, *,
                   interactive: Optional[bool] = None, show_scores: bool = True,
                   force: bool = False) -> PipelineTrainingResult:
    """Train a pipeline config as ``spacy train`` does, and write what spacy-ag adds beside it.

    config_path (Path): The pipeline config (with an [nlp] section).
    output (Path): The output directory (model-last/, model-best/, trace.jsonl, scores.json).
    overrides (Mapping[str, Any]): Dotted config overrides (``{"paths.train": "x.jsonl"}``).
    interactive (Optional[bool]): Progress bar (default: when stderr is a terminal).
    show_scores (bool): Print the dev scores.
    force (bool): Write into an existing OUTPUT that spacy-ag did not write (`foreign_output`).
    RETURNS (PipelineTrainingResult): The trained nlp, the paths and the scores.
    """
    from spacy.training.initialize import init_nlp
    from spacy.training.loop import train as spacy_train

    from ..runs.signals import TrainingInterrupted

    config_path = Path(config_path)
    out = Path(output)
    config = load_pipeline_config(config_path, overrides)
    try:
        interpolated = config.interpolate()
    except Exception as err:
        raise ConfigError(Errors.E009.format(path=config_path, message=one_line(err))) from None
    _read_plain_text(config, _check_corpora(interpolated, config_path))
    if out.exists() and not out.is_dir():
        raise TrainingLayerError(Errors.E033.format(path=out))
    refuse_foreign_output(out, force, PIPELINE_OUTPUTS)
    with output_lock(out):  # one run per output directory; SIGTERM stops it like Ctrl-C
        if interactive is None:
            interactive = sys.stderr.isatty()
        nlp_section = interpolated.get("nlp", {})
        info(f"Pipeline config {config_path}: lang {nlp_section.get('lang')!r}, tokenizer "
             f"{nlp_section.get('tokenizer', {}).get('@tokenizers')}, components "
             f"{', '.join(nlp_section.get('pipeline', [])) or 'none'}; output {out}")
        observer = PipelineTrace(out / "trace.jsonl", interactive=interactive)
        started = time.time()
        try:
            with observe_fitting(observer):
                nlp = _spacy_step(init_nlp, config, config_path)
        except TrainingInterrupted as err:
            interrupt = KeyboardInterrupt()
            interrupt.signum = err.signum  # SIGINT or SIGTERM: the exit code names it
            raise interrupt from None
        if not observer.fits and _fits_a_grammar(nlp):
            warn(Errors.W510)
        if not nlp.meta.get("description"):
            nlp.meta["description"] = _description(nlp)
        nlp.meta["ag_training"] = {"fits": observer.fits, "seconds": round(time.time() - started, 3)}
        dev = _dev_examples(nlp)
        loop_log = io.StringIO()  # spaCy's table of steps; the scores are shown below
        with naming_failed_write(out):  # spaCy writes model-best/ and model-last/ there: a full disk names OUTPUT
            nlp, _ = _spacy_step(spacy_train, nlp, config_path, output_path=out, stdout=loop_log, stderr=loop_log)
        model_dir = out / "model-last"
        scores = None
        if not dev:
            info("No gold dev data ([corpora.dev] is empty): not evaluated")
        else:
            scores = dict(nlp.evaluate(dev))
            write_atomic_file(out / "scores.json", (json.dumps(scores, indent=2) + "\n").encode("utf8"))
        good(f"Saved the pipeline to {model_dir}")
        info(f"Trace: {out / 'trace.jsonl'}")
        if scores is not None and show_scores:
            info(f"Scores on the dev data ({len(dev)} examples, {out / 'scores.json'}):")
            typer.echo(format_pipeline_scores(scores))
        return PipelineTrainingResult(nlp, out, model_dir, scores, list(observer.fits))


def _fits_a_grammar(nlp) -> bool:
    """Whether `nlp` has a part that fits an adaptor grammar by the sampler in initialize and reports
    the fit (the segmenter, ag_parser): then no fit means it was loaded. ag_topics reports none."""
    from ..components.segmenter import Segmenter

    return isinstance(nlp.tokenizer, Segmenter) or any(nlp.get_pipe_meta(name).factory == "ag_parser"
                                                       for name in nlp.pipe_names)


#: What a trained pipeline does, by its spacy-ag parts, for meta.json's description (spacy package's README).
_DESCRIPTIONS = {"segmenter": "unsupervised word segmentation", "ag_parser": "unsupervised parsing (morphology)",
                 "ag_topics": "unsupervised topics"}


def _description(nlp) -> str:
    from ..components.segmenter import Segmenter

    parts = (["segmenter"] if isinstance(nlp.tokenizer, Segmenter) else []) + [
        nlp.get_pipe_meta(name).factory for name in nlp.pipe_names]
    found = [_DESCRIPTIONS[p] for p in dict.fromkeys(parts) if p in _DESCRIPTIONS] or ["adaptor-grammar models"]
    text = ", ".join(found)
    return text[0].upper() + text[1:] + " with adaptor grammars (spacy-ag)"


def _valid_keys(err) -> str:
    """For an unknown key of a spacy-ag component, the keys it takes (spaCy's message lists none)."""
    from ..settings import ParserSettings, SegmenterSettings, TopicComponentSettings, fields_of

    groups = {"ag_parser": ParserSettings, "ag_topics": TopicComponentSettings,
              "spacy-ag.Segmenter.v1": SegmenterSettings}
    title = str(getattr(err, "title", "") or "")
    unknown = any("unexpected argument" in str(e.get("msg", "")) or "extra" in str(e.get("type", ""))
                  for e in getattr(err, "errors", None) or [])
    for name, cls in groups.items():
        if unknown and f"'{name}'" in title:
            return f"; {name} takes " + ", ".join(fields_of(cls))
    return ""


def _spacy_step(step, first, config_path: Path, **kwargs):
    """A spaCy training function, its validation errors as one line."""
    from confection import ConfigValidationError

    try:
        return step(first, **kwargs)
    except ConfigValidationError as err:
        raise ConfigError(Errors.E009.format(path=config_path, message=one_line(err) + _valid_keys(err))) from None
    except KeyError as err:  # spaCy reads sections it expects without checking for them
        raise ConfigError(Errors.E040.format(path=config_path, err=f"no {err}")) from None
    except ValueError as err:
        if "[E1015]" not in str(err):
            raise
        raise ConfigError(Errors.E040.format(path=config_path, err=str(err).split(":", 1)[-1].split(".")[0].strip()
                                             )) from None


def gold_examples(nlp, gold_path: Path, gold_format: str = "text") -> List:
    """Examples of gold data: a DocBin (.spacy) of gold Docs, a segmented text file, or (`gold_format`
    "wordseg-tags") wordseg's tagged text."""
    if not gold_path.exists():
        raise FileNotFoundError(Errors.E508.format(gold_path=gold_path))
    if gold_path.is_dir() or gold_path.suffix == ".spacy":
        from spacy.training import Corpus

        return list(Corpus(gold_path)(nlp))
    from ..components.readers import SegmentedCorpus

    return list(SegmentedCorpus(gold_path, format=gold_format)(nlp))


def evaluate_pipeline(model: PathLike, gold: PathLike, *, exclude: Optional[Sequence[str]] = None,
                      gold_format: str = "text", wordseg: bool = False) -> Dict[str, Any]:
    """Score a trained pipeline's segmentation against gold data.

    model (Path): A pipeline directory (or an installed pipeline package name).
    gold (Path): A DocBin (.spacy) of gold Docs or a gold-segmented text file.
    exclude (Optional[Sequence[str]]): Also score without these one-character
        tokens (punctuation), under "without_punctuation".
    gold_format (str): "text" or "wordseg-tags" (a text file of wordseg's tagged text).
    wordseg (bool): Also the scores as wordseg-eval reports them, under "wordseg".
    RETURNS (Dict[str, Any]): nlp.evaluate's scores (token_*, boundary_*, lexicon_*, speed, ...).
    """
    import spacy

    from ..components.scoring import doc_words
    from ..evaluation import SegmentationCounts, segmentation_scores, wordseg_scores

    nlp = spacy.load(model)
    examples = gold_examples(nlp, Path(gold), gold_format)
    if not examples:
        raise ValueError(Errors.E509.format(gold=gold))
    scores = dict(nlp.evaluate(examples))
    scores["n_examples"] = len(examples)
    pred = [doc_words(eg.predicted) for eg in examples]
    ref = [doc_words(eg.reference) for eg in examples]
    if exclude:
        s = segmentation_scores(pred, ref, exclude=exclude)
        scores["without_punctuation"] = {f"{name}_{m}": s[f"{key}_{m}"]
                                         for name, key in (("token", "token"), ("boundary", "boundary"),
                                                           ("lexicon", "type")) for m in "prf"}
    if wordseg:
        counts = SegmentationCounts()
        for p, g in zip(pred, ref):
            if g:  # wordseg-eval leaves blank lines out
                counts.add(p, g)
        scores["wordseg"] = wordseg_scores(counts)
    return scores
