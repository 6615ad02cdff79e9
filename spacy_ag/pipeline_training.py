"""Training spaCy pipelines with spacy-ag components: ``spacy-ag train`` on a pipeline config.

A pipeline config is an ordinary spaCy config (``[nlp]``, ``[components]``,
``[corpora]``, ``[training]``, ``[initialize]``) plus a top-level
``[ag_training]`` section with the sampler settings (see `spacy_ag.config`).
`train_pipeline` builds the pipeline with spaCy's own machinery
(`spacy.training.initialize.init_nlp`, which calls the tokenizer's and the
components' ``initialize``: that is where the adaptor grammars are fitted on the
raw text of ``[corpora.train]``), shows each fit's progress and trace, evaluates
on ``[corpora.dev]`` when it has examples, records the scores in
``nlp.meta["performance"]`` and writes::

    OUTPUT/model-last/     an ordinary pipeline (spacy.load, spacy evaluate, spacy package)
    OUTPUT/trace.jsonl     one line per iteration, chain and component
    OUTPUT/scores.json     the dev scores (when there is dev data)

`init_config_text` writes the starting configs of ``spacy-ag init-config`` (and
of the shipped ``configs/pipeline-*.cfg``); `evaluate_pipeline` scores a
trained pipeline on gold data for ``spacy-ag evaluate``.
"""
from __future__ import annotations

import contextlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import typer

from .cli import TraceLog, good, info, warn
from .components.fitting import FitObserver, FitSettings, observe_fitting
from .config import ConfigError, ag_training_settings, load_pipeline_config

__all__ = [
    "PipelineTrace",
    "PipelineTrainingResult",
    "SCORE_ROWS",
    "apply_ag_training",
    "evaluate_pipeline",
    "format_pipeline_scores",
    "init_config_text",
    "train_pipeline",
]

PathLike = Union[str, Path]

#: Rows of the score table: (label, key prefix).
SCORE_ROWS = (("token", "token"), ("boundary", "boundary"), ("lexicon", "lexicon"))
#: Score keys kept in meta.json's "performance" (when not None).
PERFORMANCE_KEYS = ("token_acc", "token_p", "token_r", "token_f", "boundary_p", "boundary_r", "boundary_f",
                    "lexicon_p", "lexicon_r", "lexicon_f", "speed")


class PipelineTrace(FitObserver):
    """The observer `train_pipeline` installs: a progress bar and trace.jsonl per fit."""

    def __init__(self, path: Path, settings: FitSettings, *, interactive: bool) -> None:
        super().__init__(settings)
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


def _one_line(err: Exception) -> str:
    from .config import _one_line as squeeze

    return squeeze(err)


def _corpus_path(config: Mapping[str, Any], dot_name: str) -> Optional[Any]:
    node: Any = config
    for part in dot_name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node.get("path") if isinstance(node, Mapping) else None


def _check_corpora(config: Mapping[str, Any], config_path: Path) -> None:
    """Clear one-line errors for the usual mistakes before spaCy sees the corpora."""
    training = config.get("training", {})
    train_name = training.get("train_corpus", "corpora.train")
    dev_name = training.get("dev_corpus", "corpora.dev")
    if _corpus_path(config, train_name) is None and "path" in _section(config, train_name):
        raise ConfigError(f"{config_path}: [{train_name}] path is not set; give the raw training text with "
                          "--paths.train FILE (JSONL, one {\"text\": ...} per line)")
    for name in (train_name, dev_name):
        path = _corpus_path(config, name)
        if path is not None and not Path(path).exists():
            raise FileNotFoundError(f"[{name}] path: file not found: {path}")
    if training.get("max_epochs") == -1:
        raise ConfigError(f"{config_path}: training.max_epochs = -1 (streamed corpus) would fit the grammars on "
                          "only the first 100 texts; use max_epochs = 0")


def _section(config: Mapping[str, Any], dot_name: str) -> Mapping[str, Any]:
    node: Any = config
    for part in dot_name.split("."):
        node = node.get(part, {}) if isinstance(node, Mapping) else {}
    return node if isinstance(node, Mapping) else {}


def _prepare_config(config, config_path: Path):
    """Fill in what init_nlp insists on; an absent [corpora.dev] becomes an empty corpus."""
    training = config.setdefault("training", {})
    if "seed" not in training:
        training["seed"] = config.get("system", {}).get("seed", 0)
    training.setdefault("gpu_allocator", None)
    dev_name = training.get("dev_corpus", "corpora.dev")
    if dev_name == "corpora.dev" and "dev" not in config.get("corpora", {}):
        config.setdefault("corpora", {})["dev"] = {"@readers": "spacy-ag.SegmentedCorpus.v1", "path": None,
                                                   "limit": 0}
    return config


def _is_ours(registered_name: Optional[str] = None, factory: Optional[str] = None, lang: str = "") -> bool:
    """True for a spacy-ag tokenizer (registered name) or pipeline factory."""
    if registered_name is not None:
        return registered_name.startswith("spacy-ag.")
    from spacy.util import registry

    for key in (f"{lang}.{factory}", str(factory)):
        try:
            func = registry.factories.get(key)
        except Exception:
            continue
        return getattr(func, "__module__", "").startswith("spacy_ag.")
    return False


def apply_ag_training(config, settings: FitSettings) -> List[str]:
    """Copy [ag_training] iterations/chains/seed (when not null) into every spacy-ag component.

    config (Config): The raw (not interpolated) pipeline config, changed in place.
    settings (FitSettings): The checked [ag_training] settings.
    RETURNS (List[str]): The components changed ("tokenizer" and pipe names).
    """
    values = {k: v for k, v in (("iterations", settings.iterations), ("chains", settings.chains),
                                ("seed", settings.seed)) if v is not None}
    changed: List[str] = []
    tokenizer = config.get("nlp", {}).get("tokenizer", {})
    if isinstance(tokenizer, dict) and _is_ours(registered_name=str(tokenizer.get("@tokenizers", ""))):
        tokenizer.update(values)
        changed.append("tokenizer")
    lang = str(config.get("nlp", {}).get("lang", ""))
    for name, component in config.get("components", {}).items():
        if isinstance(component, dict) and "factory" in component and _is_ours(factory=component["factory"],
                                                                                lang=lang):
            component.update(values)
            changed.append(name)
    return changed


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


def _performance(scores: Mapping[str, Any]) -> Dict[str, float]:
    return {k: float(scores[k]) for k in PERFORMANCE_KEYS if isinstance(scores.get(k), (int, float))}


def train_pipeline(config_path: PathLike, output: PathLike, overrides: Optional[Mapping[str, Any]] = None, *,
                   interactive: Optional[bool] = None, show_scores: bool = True) -> PipelineTrainingResult:
    """Train a pipeline config as ``spacy-ag train`` does and write the output directory.

    config_path (Path): The pipeline config (with an [nlp] section).
    output (Path): The output directory (model-last/, trace.jsonl, scores.json).
    overrides (Mapping[str, Any]): Dotted config overrides (``{"paths.train": "x.jsonl"}``).
    interactive (Optional[bool]): Progress bar (default: when stderr is a terminal).
    show_scores (bool): Print the dev scores.
    RETURNS (PipelineTrainingResult): The trained nlp, the paths and the scores.
    """
    from spacy import util
    from spacy.schemas import ConfigSchemaTraining
    from spacy.training.initialize import init_nlp

    from .training import TrainingInterrupted

    config_path = Path(config_path)
    out = Path(output)
    config = _prepare_config(load_pipeline_config(config_path, overrides), config_path)
    try:
        interpolated = config.interpolate()
    except Exception as err:
        raise ConfigError(f"{config_path}: {_one_line(err)}") from None
    settings = ag_training_settings(interpolated, config_path)
    apply_ag_training(config, settings)
    _check_corpora(interpolated, config_path)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output {out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    if interactive is None:
        interactive = sys.stderr.isatty()

    nlp_section = interpolated.get("nlp", {})
    info(f"Pipeline config {config_path}: lang {nlp_section.get('lang')!r}, tokenizer "
         f"{nlp_section.get('tokenizer', {}).get('@tokenizers')}, components "
         f"{', '.join(nlp_section.get('pipeline', [])) or 'none'}; output {out}")
    # iterations, chains and seed are in the components' configs now; the
    # observer adds what components have no setting for
    observer = PipelineTrace(out / "trace.jsonl", FitSettings(workers=settings.workers, sampler=settings.sampler),
                             interactive=interactive)
    started = time.time()
    try:
        with observe_fitting(observer):
            nlp = init_nlp(config)
    except TrainingInterrupted:
        raise KeyboardInterrupt from None
    if not observer.fits:
        warn("no adaptor grammar was fitted (the components were already fitted or loaded a model_path)")

    # the dev corpus, resolved as init_nlp resolved the training corpus
    filled = nlp.config.interpolate()
    T = util.registry.resolve(filled["training"], schema=ConfigSchemaTraining)
    dev_corpus = util.resolve_dot_names(filled, [T["dev_corpus"]])[0]
    dev = list(dev_corpus(nlp))
    scores = None
    if dev:
        scores = nlp.evaluate(dev)
        nlp.meta["performance"] = _performance(scores)
    else:
        info("No gold dev data ([corpora.dev] is empty): not evaluated")
    if not nlp.meta.get("description"):
        nlp.meta["description"] = "Unsupervised word segmentation with adaptor grammars (spacy-ag)"
    nlp.meta["ag_training"] = {"fits": observer.fits, "seconds": round(time.time() - started, 3)}
    model_dir = out / "model-last"
    nlp.to_disk(model_dir)
    if scores is not None:
        (out / "scores.json").write_text(json.dumps(scores, indent=2) + "\n", encoding="utf8")
    good(f"Saved the pipeline to {model_dir}")
    info(f"Trace: {out / 'trace.jsonl'}")
    if scores is not None and show_scores:
        info(f"Scores on the dev data ({len(dev)} examples, {out / 'scores.json'}):")
        typer.echo(format_pipeline_scores(scores))
    return PipelineTrainingResult(nlp, out, model_dir, scores, list(observer.fits))


# ---------------------------------------------------------------- evaluation


def gold_examples(nlp, gold_path: Path) -> List:
    """Examples of gold data: a DocBin (.spacy) of gold Docs or a segmented text file."""
    if not gold_path.exists():
        raise FileNotFoundError(f"gold file not found: {gold_path}")
    if gold_path.is_dir() or gold_path.suffix == ".spacy":
        from spacy.training import Corpus

        return list(Corpus(gold_path)(nlp))
    from .components.readers import SegmentedCorpus

    return list(SegmentedCorpus(gold_path)(nlp))


def evaluate_pipeline(model: PathLike, gold: PathLike, *, exclude: Optional[Sequence[str]] = None
                      ) -> Dict[str, Any]:
    """Score a trained pipeline's segmentation against gold data.

    model (Path): A pipeline directory (or an installed pipeline package name).
    gold (Path): A DocBin (.spacy) of gold Docs or a gold-segmented text file.
    exclude (Optional[Sequence[str]]): Also score without these one-character
        tokens (punctuation), under "without_punctuation".
    RETURNS (Dict[str, Any]): nlp.evaluate's scores (token_*, boundary_*, lexicon_*, speed, ...).
    """
    import spacy

    from .components.scoring import doc_words
    from .evaluation import segmentation_scores

    nlp = spacy.load(model)
    examples = gold_examples(nlp, Path(gold))
    if not examples:
        raise ValueError(f"{gold}: no gold examples")
    scores = dict(nlp.evaluate(examples))
    scores["n_examples"] = len(examples)
    if exclude:
        pred = [doc_words(eg.predicted) for eg in examples]
        ref = [doc_words(eg.reference) for eg in examples]
        s = segmentation_scores(pred, ref, exclude=exclude)
        scores["without_punctuation"] = {f"{name}_{m}": s[f"{key}_{m}"]
                                         for name, key in (("token", "token"), ("boundary", "boundary"),
                                                           ("lexicon", "type")) for m in "prf"}
    return scores


# ---------------------------------------------------------------- init-config

GRAMMARS = ("unigram", "colloc")

_CONFIG_TEMPLATE = """\
# spaCy pipeline config for spacy-ag: {what}.
# Written by `spacy-ag init-config {args}`.
#
# Train it (the segmenter is fitted without supervision on the raw text; gold
# dev data is optional and only scored):
#
#   spacy-ag train {name} --output training --paths.train train.jsonl [--paths.dev dev.txt]
#
# paths.train: JSONL, one {{"text": "..."}} per line (raw, unsegmented text).
# paths.dev:   gold-segmented text, one utterance per line, words separated by
#              spaces (spacy-ag.SegmentedCorpus.v1); null: no evaluation.
# training/model-last is an ordinary pipeline for spacy.load, spacy evaluate
# and spacy package; training/trace.jsonl is the sampler's trace.
# (`spacy train` and nlp.initialize() fit the segmenter too, with the
# tokenizer's own iterations, chains and seed.)

[paths]
train = null
dev = null

[system]
seed = 0
gpu_allocator = null

[nlp]
lang = "{lang}"
pipeline = []
batch_size = 1000

[nlp.tokenizer]
@tokenizers = "spacy-ag.Segmenter.v1"
# "unigram" (a sentence is words) or "colloc" (collocations of words), or a grammar file
grammar = {grammar}
segment_category = "Word"
# iterations, chains and seed: from [ag_training] below
# hard word boundaries: null = punctuation and whitespace, "" = whitespace only
boundary_chars = {boundary}
# Pitman-Yor a and b of the adapted nonterminals (Word, Colloc)
default_a = 0.0001
default_b = 10000.0

[components]

[corpora]

[corpora.train]
@readers = "spacy.JsonlCorpus.v1"
path = ${{paths.train}}
min_length = 0
max_length = 0
limit = 0

[corpora.dev]
@readers = "spacy-ag.SegmentedCorpus.v1"
path = ${{paths.dev}}
limit = 0

[training]
seed = ${{system.seed}}
gpu_allocator = ${{system.gpu_allocator}}
train_corpus = "corpora.train"
dev_corpus = "corpora.dev"
# 0, not -1: a streamed corpus would fit the segmenter on its first 100 texts only
max_epochs = 0
frozen_components = []
annotating_components = []

[training.score_weights]
token_f = 1.0

[initialize]

[initialize.tokenizer]
# a model directory of `spacy-ag train` with an engine config, instead of fitting
model_path = null
refit = false

# Sampler settings, read by `spacy-ag train` (spaCy ignores this section).
# iterations, chains and seed are copied into every spacy-ag component (the
# tokenizer, ag_parser) before the pipeline is built, so model-last/config.cfg
# shows the values used; null keeps a component's own value.
[ag_training]
iterations = {iterations}
chains = {chains}
seed = ${{system.seed}}
# processes for the chains (0: one per chain, at most the cores)
workers = 0

# Any field of spacy_ag.core.chain.SamplerSettings, e.g. anneal_start = 3.0
[ag_training.sampler]
"""


def init_config_text(*, lang: Optional[str] = None, grammar: str = "unigram", phonemes: bool = False,
                     iterations: int = 200, chains: int = 1, name: str = "config.cfg",
                     args: Optional[str] = None) -> str:
    """The text of a starting pipeline config (see ``spacy-ag init-config``).

    lang (Optional[str]): spaCy language code; default "xx" for phonemes, else "zh".
    grammar (str): "unigram", "colloc" or a grammar file.
    phonemes (bool): Phoneme strings (Brent): only whitespace is a hard
        boundary, because the transcription uses punctuation characters as phonemes.
    iterations, chains (int): Sampler settings ([ag_training]).
    name (str): The file name shown in the usage comment.
    args (Optional[str]): The init-config arguments shown in the header.
    RETURNS (str): The config.
    """
    from spacy.util import get_lang_class

    from .components.segmenter import BUILTIN_GRAMMARS

    if lang is None:
        lang = "xx" if phonemes else "zh"
    try:
        get_lang_class(lang)
    except Exception:
        raise ValueError(f"--lang {lang!r} is not a language spaCy knows (e.g. zh, xx, en)") from None
    if grammar not in BUILTIN_GRAMMARS and not Path(grammar).is_file():
        raise ValueError(f"--grammar {grammar!r} is neither a built-in grammar ({', '.join(GRAMMARS)}) nor a "
                         "grammar file")
    if iterations < 1 or chains < 1:
        raise ValueError("--iterations and --chains must be at least 1")
    if phonemes:
        what = f"unsupervised word segmentation of phoneme strings, {grammar} grammar"
    else:
        what = f"unsupervised word segmentation ({lang}), {grammar} grammar"
    if args is None:
        args = f"{name} --lang {lang} --grammar {grammar}" + (" --phonemes" if phonemes else "")
    return _CONFIG_TEMPLATE.format(what=what, args=args, name=name, lang=lang, grammar=json.dumps(grammar),
                                   boundary='""' if phonemes else "null", iterations=iterations,
                                   chains=chains)
