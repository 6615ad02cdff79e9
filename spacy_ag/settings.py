"""Every setting of spacy-ag, defined once: its type, range, default and a one-line help.

A settings group is a dataclass whose fields are made with `setting`; the
group is one config section (``[sampler]``, ``[online]``, ...), one spaCy
component's config, or both. Everything else is derived from these classes:
the config sections of `spacy_ag.config`, the components' ``default_config``
and factory signatures, the CLI help and ``init-config``'s output. `check`
is the one validator: it converts a mapping of raw values into a group,
rejecting unknown keys (with the list of valid ones), wrong types and values
out of range with one line naming the section and key.

This module imports nothing of spacy_ag but its errors, and no numba, so that reading a
config or printing ``--help`` stays fast.
"""
from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

from .errors import ConfigError, Errors, split_code, with_place

__all__ = [
    "AUTO_UNITS",
    "DEFAULT_A",
    "DEFAULT_B",
    "CORPUS_FORMATS",
    "GOLD_FORMATS",
    "SECTIONS",
    "TEXT_CORPUS_FORMATS",
    "GrammarSettings",
    "LANGUAGE_UNITS",
    "OnlineSettings",
    "ParserSettings",
    "SamplerSettings",
    "SegmentedCorpusSettings",
    "SegmenterSettings",
    "SettingError",
    "TextCorpusSettings",
    "TopicComponentSettings",
    "TopicSettings",
    "TrainingSettings",
    "check",
    "defaults",
    "help_of",
    "normalized",
    "resolve_units",
    "topic_online_settings",
    "units_for_language",
]

T = TypeVar("T")

#: Pitman-Yor parameters of adapted nonterminals whose grammar line gives none:
#: py-cfg's starting values in Johnson & Goldwater (2009), -a 0.0001 -b 10000.
DEFAULT_A = 1e-4
DEFAULT_B = 1e4


class SettingError(ConfigError):
    """A setting that cannot be used; `where` is ``section.key``, `message` what is wrong."""

    code = "E012"

    def __init__(self, where: str, message: str):
        super().__init__(with_place(f"{where} ", message))
        self.where = where
        self.message = split_code(message)[1]  # what is wrong, for messages that name the place their own way


def setting(default: Any = dataclasses.MISSING, help: str = "", *, low: Optional[float] = None,
            high: Optional[float] = None, low_open: bool = False, high_open: bool = False,
            choices: Optional[Sequence[Any]] = None, factory: Any = None, required: bool = False) -> Any:
    """A dataclass field with what `check` needs: range, choices, and the help line."""
    meta = {"help": help, "low": low, "high": high, "low_open": low_open, "high_open": high_open,
            "choices": tuple(choices) if choices else None, "required": required}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


#: What one terminal of ``mode = "chars"`` is (`spacy_ag.text_units`); the choices are
#: `spacy_ag.text_units.UNITS`, written here so that reading a config imports nothing more.
UNIT_CHOICES = ("graphemes", "codepoints", "alnum-runs")


#: ``units = "auto"`` in a component that knows its language (the segmenter, ``ag_parser``): the units
#: of `LANGUAGE_UNITS` for ``nlp.lang`` (`units_for_language`).
AUTO_UNITS = "auto"

#: Languages written without spaces whose text embeds numbers and Latin words: one terminal per run of
#: digits and Latin letters, so that ``2001年GDP`` is ``2001``, ``年``, ``GDP`` and not ``2``, ``001年``, ...
#: (graphemes would leave a digit or letter next to a CJK character in one unit). `spacy-ag init-config
#: --lang` writes these units and ``units = "auto"`` resolves to them; every other language gets graphemes.
LANGUAGE_UNITS: Dict[str, str] = {"zh": "alnum-runs", "ja": "alnum-runs", "th": "alnum-runs"}


def units_for_language(lang: Optional[str]) -> str:
    """The text units of `lang` (a spaCy language code): `LANGUAGE_UNITS`, else graphemes."""
    return LANGUAGE_UNITS.get(lang or "", UNIT_CHOICES[0])


def resolve_units(units: str, lang: Optional[str]) -> str:
    """`units`, with "auto" replaced by the units of `lang` (`units_for_language`)."""
    return units_for_language(lang) if units == AUTO_UNITS else units


def units_setting(by_language: bool = False) -> Any:
    """The one definition of the ``units`` setting, shared by every group that reads text; with
    `by_language` (a component that knows ``nlp.lang``) its default is "auto", the units of the language."""
    help_text = ("terminals are extended grapheme clusters (graphemes: letters with their combining marks, emoji "
                 "sequences), single code points (codepoints), or graphemes with each run of digits and Latin "
                 "letters as one terminal (alnum-runs: numbers and Latin words inside Chinese or Japanese text)")
    if by_language:
        return setting(AUTO_UNITS, help_text + '; "auto": alnum-runs for ' + ", ".join(sorted(LANGUAGE_UNITS))
                       + ", graphemes for every other nlp.lang", choices=UNIT_CHOICES + (AUTO_UNITS,))
    return setting(UNIT_CHOICES[0], help_text, choices=UNIT_CHOICES)


#: The default longest yield, in terminals, of an adapted nonterminal (``max_span``). Long enough for any word or collocation of the corpora we know
#: (Brent's longest utterance is 53 phonemes, PKU's longest word 27 characters), and for the words
#: a morphology grammar parses; short enough that the charts of a 100,000-character line stay small
#: (benchmarks/lengths.py). A symbol whose rules bound its yield (a syllable of at most three
#: phonemes) gets that bound instead.
AUTO_MAX_SPAN = 64


def max_span_setting() -> Any:
    """The one definition of ``max_span``, shared by the engine's [grammar] and the components."""
    return setting(AUTO_MAX_SPAN, "longest yield, in terminals, of an adapted nonterminal without "
                                  "`@ NT max_span=N` in the grammar; it makes parsing linear in the length "
                                  "of a text", low=1)


#: Where MCMC chains run (`spacy_ag.runs.ray_chains` for "ray"), and the batches of `spacy-ag segment` and
#: `parse` of a directory (`spacy_ag.annotation`).
BACKEND_CHOICES = ("local", "ray")


def backend_setting() -> Any:
    """The one definition of ``backend``, shared by [training] and the components that fit chains."""
    return setting("local", "where the chains (mcmc) or the E-step (online, vb) run: on this machine (local) "
                            "or on a Ray cluster (ray, after `pip install spacy-ag[ray]`); the result is the same",
                   choices=BACKEND_CHOICES)


def chain_workers_setting() -> Any:
    """The one definition of the chains' ``workers``, shared with `backend_setting`."""
    return setting(0, "processes for the chains (0: one per chain, at most the cores; ray: chains running at "
                      "once, 0: as many as the cluster has CPUs for; online and vb on ray: E-step workers, "
                      "0: one per CPU of the cluster)", low=0)


def ray_address_setting() -> Any:
    """The one definition of ``ray_address``, shared with `backend_setting`."""
    return setting(None, 'backend = "ray": the cluster to join ("auto", "HOST:6379" or "ray://HOST:10001"; '
                         "null: the one RAY_ADDRESS or `ray start` on this machine names, else a new local one)")


# ---------------------------------------------------------------- MCMC


@dataclass
class SamplerSettings:
    """MCMC settings ([sampler]); the defaults are Johnson & Goldwater (2009)'s (py-cfg flags in brackets)."""

    collapsed: bool = setting(True, "integrate the rule probabilities out [-E]")
    init: str = setting("batch", "initialise all sentences at once (batch) or one by one (incremental) [-D], "
                                 "or from an online pass with the [online] settings (online)",
                        choices=("batch", "incremental", "online"))
    label_resampling: bool = setting(True, "resample the labels of tables after each sweep [-R -1]")
    label_order: str = setting("adaptor", "visit the tables adaptor by adaptor, each in a random order (adaptor), "
                                          "or by yield, all adaptors together, as py-cfg does (yield)",
                               choices=("adaptor", "yield"))
    label_equality: str = setting("table", "a new label equal to the old one keeps the old: when it uses the same "
                                           "tables (table), or as py-cfg compares trees, tables with equal counts "
                                           "and labels counting as equal (value)",
                                  choices=("table", "value"))
    mh: bool = setting(True, "Metropolis-Hastings correction of the PCFG proposal [-H turns it off]")
    random_order: bool = setting(True, "visit sentences in a new random order every sweep [-I: corpus order]")
    sample_hyper: bool = setting(True, "slice-sample the Pitman-Yor a and b")
    sample_a: bool = setting(True, "sample a as well as b")
    beta_e: float = setting(1.0, "a ~ Beta(e, f): e [-e]", low=0.0, low_open=True)
    beta_f: float = setting(1.0, "a ~ Beta(e, f): f [-f]", low=0.0, low_open=True)
    gamma_shape: float = setting(0.1, "b ~ Gamma(shape, scale): shape [-h]", low=0.0, low_open=True)
    gamma_scale: float = setting(10.0, "b ~ Gamma(shape, scale): scale [-g]", low=0.0, low_open=True)
    hyper_rounds: int = setting(5, "slice-sampling rounds over all adaptors per sweep", low=0)
    hyper_iterations: int = setting(20, "slice-sampling steps per parameter and round", low=1)
    hyper_start: int = setting(3, "first sweep that samples the hyperparameters", low=1)
    anneal_start: float = setting(1.0, "initial temperature (1: no annealing) [-T]", low=1.0)
    anneal_iterations: int = setting(0, "sweeps over which the temperature falls to 1 [-m]", low=0)

    def temperature(self, iteration: int) -> float:
        if self.anneal_iterations <= 0 or iteration > self.anneal_iterations or self.anneal_start <= 1:
            return 1.0
        frac = (iteration - 1) / self.anneal_iterations
        return float(self.anneal_start ** (1.0 - frac))

    def to_dict(self) -> Dict:
        return dataclasses.asdict(self)


@dataclass
class TrainingSettings:
    """A training run ([training]): how long, how many chains, which samples are kept."""

    iterations: int = setting(2000, "MCMC sweeps per chain", low=1)
    chains: int = setting(1, "independent chains, decoded together by maximum marginal", low=1)
    seed: int = setting(0, "random seed of chain 0 (chain c uses seed + c)", low=0)
    burn_in: Optional[int] = setting(None, "samples are kept after this sweep (null: half the sweeps)", low=0)
    sample_every: int = setting(10, "keep a sample every this many sweeps after the burn-in", low=1)
    checkpoint_every: int = setting(50, "write checkpoints every this many sweeps or minibatches (0: never)",
                                    low=0)
    eval_every: int = setting(0, "score against gold every this many sweeps (0: never)", low=0)
    eval_at: Tuple[int, ...] = setting((), "also score at these sweeps, e.g. [20, 100, 300]", low=1)
    workers: int = chain_workers_setting()
    backend: str = backend_setting()
    ray_address: Optional[str] = ray_address_setting()

    def evaluates(self, iteration: int) -> bool:
        return bool(self.eval_every and iteration % self.eval_every == 0) or iteration in self.eval_at

    def keeps_sample(self, iteration: int) -> bool:
        burn_in = self.iterations // 2 if self.burn_in is None else self.burn_in
        return iteration > burn_in and (self.iterations - iteration) % self.sample_every == 0


# ---------------------------------------------------------------- variational


@dataclass
class OnlineSettings:
    """Variational settings ([online]); the defaults are Zhai et al. (2014)'s Brent unigram settings."""

    batch_size: int = setting(20, "sentences per minibatch (vb: the whole corpus)", low=1)
    tau: float = setting(128.0, "decay inertia tau", low=0.0)
    kappa: float = setting(0.6, "decay rate kappa (0.5 < kappa <= 1 for online; vb: 0)", low=0.0, high=1.0)
    samples: int = setting(10, "trees sampled per sentence in the E-step", low=1, high=1000)
    refine_every: int = setting(50, "minibatches between prunings of the grammatons (vb: every pass)", low=0)
    truncation: Dict[str, int] = setting(help='entries kept per adapted nonterminal, e.g. {"Word": 1500}',
                                         factory=dict, low=1)
    default_truncation: int = setting(1500, "entries kept where neither truncation nor the grammar says",
                                      low=1)
    passes: int = setting(1, "passes over the corpus (vb: iterations)", low=1)
    corpus_size: int = setting(0, "D of the updates (0: the corpus length, or the sentences seen so far)",
                               low=0)
    statistics_scale: str = setting("none", "scaling of decayed statistics: none (the paper), bias or tau_kappa",
                                    choices=("none", "bias", "tau_kappa"))
    update_alpha: bool = setting(True, "Newton steps on the rule priors")
    update_b: bool = setting(True, "Newton steps on the Pitman-Yor b")
    update_a: bool = setting(False, "Newton steps on the Pitman-Yor a")
    rederive: bool = setting(True, "re-derive table labels after each pruning")
    hyper_iterations: int = setting(20, "Newton iterations per hyperparameter update", low=1)
    workers: int = setting(0, "threads of the E-step (0: all cores)", low=0)

    def to_dict(self) -> Dict:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- engine configs


@dataclass
class PathsSettings:
    """[paths]: the files of a run (relative to the working directory)."""

    train: Optional[str] = setting(None, "training text")
    gold: Optional[str] = setting(None, "gold segmentation of the training text, to score against")
    output: Optional[str] = setting(None, "default output directory of `spacy-ag train`")


@dataclass
class GrammarSettings:
    """[grammar]: the grammar file and how terminals are read."""

    path: str = setting("", "grammar file, relative to the config's folder", required=True)
    format: str = setting("auto", "grammar format", choices=("auto", "pycfg", "pyadagram"))
    default_a: float = setting(DEFAULT_A, "Pitman-Yor a of adapted nonterminals without numbers",
                               low=0.0, high=1.0)
    default_b: float = setting(DEFAULT_B, "Pitman-Yor b of adapted nonterminals without numbers",
                               low=0.0, low_open=True)
    default_weight: float = setting(1.0, "weight of rules without numbers", low=0.0, low_open=True)
    segment_category: str = setting(
        "Word", "the nonterminal whose yields are the words, or several joined by commas (Word,FuncWord1)")
    mode: str = setting("chars", "terminals are characters (chars) or space-separated tokens",
                        choices=("chars", "tokens"))
    units: str = units_setting()
    split_at: str = setting("", 'hard boundaries: "punctuation", "" (none) or the characters themselves')
    max_span: int = max_span_setting()


#: How a file of utterances is written (docs/input-formats.md): plain text, one utterance per line
#: ("text"); wordseg's tagged text, each unit followed by a space and the words and syllables ended by
#: ";eword" and ";esyll" ("wordseg-tags"); wordseg-prep's output, the units separated by spaces
#: ("wordseg-prepared").
CORPUS_FORMATS = ("text", "wordseg-tags", "wordseg-prepared")
#: The formats of gold words: segmented text (words separated by spaces, as `wordseg-prep --gold`
#: writes them) or wordseg's tagged text (a word ends at each ";eword").
GOLD_FORMATS = ("text", "wordseg-tags")
#: The formats of the raw training text of a pipeline (`spacy-ag.TextCorpus.v1`): JSONL records
#: ``{"text": ...}``, one of `CORPUS_FORMATS`, or "auto": JSONL for a .jsonl or .json file, text for a
#: .txt file, else JSONL when the first non-blank line is a JSON object.
TEXT_CORPUS_FORMATS = ("auto", "jsonl") + CORPUS_FORMATS


#: What each format of `TEXT_CORPUS_FORMATS` is, for the help lines.
_FORMAT_HELP = {
    "auto": "auto (jsonl for a .jsonl or .json file, text for a .txt file, else by the first non-blank line)",
    "jsonl": 'jsonl (one {"text": ...} per line)',
    "text": "text (one utterance per line)",
    "wordseg-tags": "wordseg-tags (wordseg's tagged text: units followed by spaces, ;esyll and ;eword ending "
                    "syllables and words; the gold words are the ;eword words, syllables are not used)",
    "wordseg-prepared": "wordseg-prepared (wordseg-prep's output: units separated by spaces, no word boundaries)",
}


def corpus_format_setting(default: str = "text", choices: Sequence[str] = CORPUS_FORMATS) -> Any:
    """The one definition of a corpus file's ``format``, shared by [corpus] and `TextCorpusSettings`."""
    described = [_FORMAT_HELP[c] for c in choices]
    return setting(default, "how the file is written: " + ", ".join(described[:-1]) + " or " + described[-1],
                   choices=choices)


@dataclass
class CorpusSettings:
    """[corpus]: the training text."""

    path: Optional[str] = setting(None, "training file (one utterance per line)")
    gold: bool = setting(False, "the file is gold-segmented: spaces are removed and score the result (format "
                                "text; wordseg-tags always give gold words, wordseg-prepared never)")
    format: str = corpus_format_setting()


@dataclass
class TextCorpusSettings:
    """``spacy-ag.TextCorpus.v1``: the raw training text of a pipeline (reference = predicted)."""

    format: str = corpus_format_setting("auto", TEXT_CORPUS_FORMATS)
    min_length: int = setting(0, "skip texts of fewer tokens (0: no limit)", low=0)
    max_length: int = setting(0, "skip texts of more tokens (0: no limit)", low=0)
    limit: int = setting(0, "read at most this many texts (0: all)", low=0)


@dataclass
class SegmentedCorpusSettings:
    """``spacy-ag.SegmentedCorpus.v1``: gold words, one utterance per line."""

    format: str = setting("text", "text (words separated by spaces, as wordseg-prep --gold writes them) or "
                                  "wordseg-tags (wordseg's tagged text: a word ends at each ;eword)",
                          choices=GOLD_FORMATS)
    limit: int = setting(0, "read at most this many utterances (0: all)", low=0)


@dataclass
class InferenceSettings:
    """[inference]: which algorithm trains the grammar."""

    mode: str = setting("mcmc", "MCMC, batch variational Bayes or online", choices=("mcmc", "vb", "online"))
    stream: bool = setting(False, "online: read corpus.path lazily, in passes")
    shuffle_buffer: int = setting(10000, "online stream: shuffle within a window of this many lines", low=0)


# ---------------------------------------------------------------- topics

#: Zhai et al. (2014)'s de-news settings (B = 50, K_Topic = 3k), except two measured choices
#: (benchmarks/topics.py): the topics' a and b stay fixed, and the sticks are re-sorted every
#: 20 minibatches instead of 100.
TOPIC_ONLINE_DEFAULTS: Dict[str, Any] = dict(batch_size=50, tau=64.0, kappa=0.8, refine_every=20,
                                             default_truncation=3000, rederive=False, update_alpha=False,
                                             update_a=False, update_b=False)


def topic_online_settings(**overrides: Any) -> OnlineSettings:
    """The online settings of the topic model: `TOPIC_ONLINE_DEFAULTS` with `overrides`."""
    return OnlineSettings(**{**TOPIC_ONLINE_DEFAULTS, **overrides})


#: Pitman-Yor b of every topic. Measured on de-news (K = 20, 5 passes, seed 1; gensim's u_mass and
#: c_npmi of the top 10 words): b = 1, 10, 30, 100, 1000 give u_mass -2.54, -2.31, -2.48, -2.40, -3.32
#: and c_npmi .043, .063, .062, .059, .028, while "auto" (tokens / (2 n_topics), about 7,000 there)
#: gives -10.69 and -.141: a large b leaves most of a topic's mass to the topic-independent
#: character base, so the topics barely differ and their top words are rare ones.
TOPIC_B = 10.0

#: How a topic model learns from a corpus (`TopicModel.fit`): online passes or collapsed Gibbs sweeps.
TOPIC_INFERENCE = ("online", "gibbs")


@dataclass
class TopicModelSettings:
    """What a topic model is: shared by topic configs and the ``ag_topics`` component."""

    # the upper bounds keep a saved model's header (checked by these ranges) from asking for ever or
    # for all memory: 100,000 topics is five times the largest grammar benchmarked (20,000 topics)
    n_topics: int = setting(5, "number of topics", low=1, high=100_000)
    alpha: float = setting(0.1, "Dirichlet prior of the document proportions", low=0.0, low_open=True)
    a: float = setting(0.0, "Pitman-Yor a of every topic", low=0.0, high=1.0, high_open=True)
    b: Union[float, str] = setting(TOPIC_B, 'Pitman-Yor b of every topic, or "auto": tokens / (2 n_topics)',
                                   low=0.0, low_open=True, choices=("auto",))
    # online on de-news (K = 20, docs/benchmarks.md "Online topics: the knobs"): c_npmi .035 after 1 pass, .053
    # after 3, .063 after 5, .053 after 15
    passes: int = setting(5, "online passes over the documents (inference = online)", low=1)
    local_iterations: int = setting(20, "a document's proportions: fixed-point iterations (online), or Gibbs "
                                        "sweeps of a new document, half of them burn-in (gibbs)", low=1,
                                high=1000)
    units: str = units_setting()
    # a corpus in memory is learned by Gibbs sweeps: on de-news (K = 20, docs/benchmarks.md "What makes
    # the topics coherent") c_npmi .094 against .038 online; streams, partial_fit and spaCy's updates are
    # online whatever this says
    inference: str = setting("gibbs", "how a corpus in memory is learned: collapsed Gibbs sweeps (gibbs; needs "
                                      "a = 0) or online passes (online); a stream, partial_fit and spaCy's updates "
                                      "are always online", choices=TOPIC_INFERENCE)
    sweeps: int = setting(300, "Gibbs sweeps (inference = gibbs)", low=1)
    alpha_every: int = setting(10, "Gibbs: refit the asymmetric document prior alpha every this many sweeps "
                                   "(0: keep it fixed)", low=0)
    sample_b: bool = setting(True, "Gibbs: sample every topic's b (and the lexicon's) after every sweep, from "
                                   "a Gamma(0.1, 10) prior; b is then where the chains start")
    # with Gibbs sweeps and sampled b the lexicon lifts c_npmi from .075 to .094 (de-news, K = 20);
    # online it changes nothing measurable (.031 against .038, within the seeds' spread)
    word_adapted: bool = setting(True, "a shared lexicon: an adapted WORD (a = 0, b = 100) between the topics and "
                                        "the spelling")
    history_every: int = setting(25, "Gibbs: record every topic's top words every this many sweeps, for "
                                     "`spacy-ag topics --history` (0: only after the last sweep; online records "
                                     "them at every pruning, online.refine_every)", low=0)
    history_size: int = setting(20, "top words of every topic in each recorded ranking of the history", low=1,
                                high=100_000)


@dataclass
class TopicSettings(TopicModelSettings):
    """[topics] of a topic config."""

    top_words: int = setting(10, "top words shown and scored per topic", low=1)


@dataclass
class TopicCorpusSettings:
    """[corpus] of a topic config: documents, one per line, tokens separated by spaces."""

    path: Optional[str] = setting(None, "documents file")
    heldout_fraction: float = setting(0.1, "fraction of documents held out for evaluation", low=0.0, high=1.0,
                                      high_open=True)


@dataclass
class TopicRunSettings:
    """[training] of a topic config."""

    seed: int = setting(0, "random seed", low=0)
    checkpoint_every: int = setting(50, "write a checkpoint every this many minibatches (online) or sweeps (gibbs) "
                                        "(0: never)", low=0)


# ---------------------------------------------------------------- spaCy components


def online_updates_setting(default: bool = True) -> Any:
    """The one definition of ``online_updates``, shared by the components that spaCy's loop updates."""
    return setting(default, "spaCy's update makes an online step (false: the fit of initialize is final and "
                            "spaCy's loop leaves it as it is)")


@dataclass
class FittedGrammarSettings:
    """What the segmenter and ``ag_parser`` share: the adaptor parameters and the MCMC fit of initialize."""

    default_a: float = setting(DEFAULT_A, "Pitman-Yor a of adapted nonterminals without numbers",
                               low=0.0, high=1.0)
    default_b: float = setting(DEFAULT_B, "Pitman-Yor b of adapted nonterminals without numbers",
                               low=0.0, low_open=True)
    iterations: int = setting(200, "MCMC sweeps when fitted in initialize", low=1)
    chains: int = setting(1, "independent chains (decoded with chain 0)", low=1)
    seed: int = setting(0, "random seed of chain 0", low=0)
    workers: int = chain_workers_setting()
    backend: str = backend_setting()
    ray_address: Optional[str] = ray_address_setting()
    sampler: Dict[str, Any] = setting(help="MCMC settings (any [sampler] key, e.g. anneal_start = 3.0)",
                                      factory=dict)
    units: str = units_setting(by_language=True)
    max_span: int = max_span_setting()


@dataclass
class SegmenterSettings(FittedGrammarSettings):
    """The segmenter tokenizer ([nlp.tokenizer], ``spacy-ag.Segmenter.v1``)."""

    grammar: str = setting("unigram", '"unigram", "colloc", "colloc3" or a grammar file')
    segment_category: str = setting(
        "Word", "the nonterminal whose yields are the words, or several joined by commas (Word,FuncWord1)")
    boundary_chars: Optional[str] = setting(None, 'hard word boundaries: null = punctuation, "" = whitespace only')


@dataclass
class ParserSettings(FittedGrammarSettings):
    """The ``ag_parser`` component ([components.<name>])."""

    # a parser usually comes after a segmenter, on longer texts: fewer sweeps by default
    iterations: int = setting(100, "MCMC sweeps when fitted in initialize", low=1)
    grammar: str = setting("unigram", '"unigram", "colloc", "morph", a morphology grammar or a grammar file')
    mode: str = setting("doc", "one tree per Doc (doc) or per token (token)", choices=("doc", "token"))
    spans_key: str = setting("ag", "key of the span group of the trees")
    segment_category: Optional[str] = setting(None, "the model's segmentation category (null: the start symbol)")
    morph_labels: List[str] = setting(help="labels whose yields are token._.ag_morphs",
                                      factory=lambda: ["Prefix", "Stem", "Suffix", "Morph"])
    classes: int = setting(6, 'hidden classes of the "-classes" morphology grammars', low=1)
    train_on: str = setting("tokens", "token mode: fit on every token or on each distinct token once",
                            choices=("tokens", "types"))
    set_morph: bool = setting(False, "add AgClass=<c> to token.morph (token mode)")
    compact: bool = setting(True, "keep only adapted nodes and roots")
    model: Optional[str] = setting(None, "a model directory to load instead of fitting")
    online_updates: bool = online_updates_setting()


@dataclass
class TopicComponentSettings(TopicModelSettings):
    """The ``ag_topics`` component ([components.<name>])."""

    seed: int = setting(0, "random seed", low=0)
    attr: str = setting("LOWER", "token attribute that is the word", choices=("LOWER", "ORTH", "NORM", "LEMMA"))
    skip_stop: bool = setting(False, "leave stop words out of the model")
    prefix: str = setting("TOPIC_", "prefix of the doc.cats labels")
    batch_size: int = setting(TOPIC_ONLINE_DEFAULTS["batch_size"], "documents per online minibatch", low=1)
    truncation: int = setting(TOPIC_ONLINE_DEFAULTS["default_truncation"], "entries kept per topic", low=1)
    # the topics of initialize's Gibbs sweeps are final: online steps would move them towards the online
    # topics, far less coherent (docs/benchmarks.md "What makes the topics coherent"); true learns from
    # spaCy's updates (no initialize)
    online_updates: bool = online_updates_setting(False)


#: Engine config sections -> settings group.
SECTIONS: Dict[str, type] = {
    "paths": PathsSettings,
    "grammar": GrammarSettings,
    "corpus": CorpusSettings,
    "inference": InferenceSettings,
    "sampler": SamplerSettings,
    "online": OnlineSettings,
    "training": TrainingSettings,
}

#: Topic config sections -> settings group.
TOPIC_SECTIONS: Dict[str, type] = {
    "paths": PathsSettings,
    "corpus": TopicCorpusSettings,
    "topics": TopicSettings,
    "online": OnlineSettings,
    "training": TopicRunSettings,
}


# ---------------------------------------------------------------- the validator


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _in_range(value: float, meta: Mapping[str, Any]) -> bool:
    low, high = meta.get("low"), meta.get("high")
    if low is not None and (value <= low if meta.get("low_open") else value < low):
        return False
    if high is not None and (value >= high if meta.get("high_open") else value > high):
        return False
    return True


def _range_text(meta: Mapping[str, Any]) -> str:
    low, high = meta.get("low"), meta.get("high")
    if low is not None and high is not None:
        return f" in {'(' if meta.get('low_open') else '['}{low:g}, {high:g}{')' if meta.get('high_open') else ']'}"
    if low is not None:
        return f" {'>' if meta.get('low_open') else '>='} {low:g}"
    if high is not None:
        return f" {'<' if meta.get('high_open') else '<='} {high:g}"
    return ""


class _Bad(Exception):
    def __init__(self, expected: str):
        super().__init__(expected)
        self.expected = expected


def _convert(value: Any, hint: Any, meta: Mapping[str, Any]) -> Any:
    """`value` as the type `hint`, within the field's range and choices, or _Bad(what was expected)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    choices = meta.get("choices")
    if origin is Union:
        options = [a for a in args if a is not type(None) and not (choices and a is str)]
        if value is None and type(None) in args:
            return None
        if choices and value in choices:
            return value
        for option in options:
            try:
                return _convert(value, option, {**meta, "choices": None})
            except _Bad:
                continue
        what = " or ".join(_type_text(o, meta) for o in options)
        extra = " or " + ", ".join(f'"{c}"' for c in choices) if choices else ""
        raise _Bad(what + extra + (" or null" if type(None) in args else ""))
    if hint is bool:
        if not isinstance(value, bool):
            raise _Bad("true or false")
        return value
    if hint is int:
        if not _is_int(value) or not _in_range(value, meta):
            raise _Bad("an integer" + _range_text(meta))
        return value
    if hint is float:
        ok = (_is_int(value) or isinstance(value, float)) and math.isfinite(value)
        if not ok or not _in_range(float(value), meta):
            raise _Bad("a number" + _range_text(meta))
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise _Bad("a string")
        if choices and value not in choices:
            raise _Bad("one of " + ", ".join(f'"{c}"' for c in choices))
        return value
    if origin in (tuple, list) or hint in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise _Bad(f"a list, e.g. {_example(hint)}")
        inner = args[0] if args else Any
        out = [_convert(v, inner, meta) if inner is not Any else v for v in value]
        return tuple(out) if origin is tuple else out
    if origin is dict or hint is dict:
        if not isinstance(value, Mapping):
            raise _Bad("a table")
        key_type, value_type = args if args else (str, Any)
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise _Bad("a table with string keys")
            out[k] = v if value_type is Any else _convert(v, value_type, meta)
        return out
    return value


def _type_text(hint: Any, meta: Mapping[str, Any]) -> str:
    return {bool: "true or false", int: "an integer" + _range_text(meta), float: "a number" + _range_text(meta),
            str: "a string"}.get(hint, str(hint))


def _example(hint: Any) -> str:
    return "[20, 100, 300]" if typing.get_args(hint)[:1] == (int,) else '["a", "b"]'


def fields_of(cls: type) -> Dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def hints_of(cls: type) -> Dict[str, Any]:
    return typing.get_type_hints(cls)


def default_of(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory()  # type: ignore[misc]


def defaults(cls: type) -> Dict[str, Any]:
    """Every setting of `cls` with its default (a fresh copy of mutable defaults)."""
    return {name: default_of(f) for name, f in fields_of(cls).items()}


def help_of(cls: type, name: str) -> str:
    return fields_of(cls)[name].metadata.get("help", "")


def normalized(settings: T, section: str) -> T:
    """`settings` (a settings group) checked, its values converted to their types (4 -> 4.0)."""
    return check(type(settings), dataclasses.asdict(settings), section)


def check(cls: Type[T], values: Mapping[str, Any], section: str, *, partial: bool = False) -> T:
    """`values` checked and converted into a `cls`; missing keys take their defaults.

    Raises `SettingError` (one line) for an unknown key (listing the valid
    ones), a subsection where a value belongs, a value of the wrong type or
    out of range, or a missing required key. With `partial`, returns only
    the checked values as a dict instead of a `cls`.
    """
    if not isinstance(values, Mapping):
        raise SettingError(f"[{section}]", Errors.E440.format(value=values))
    known, hints = fields_of(cls), hints_of(cls)
    out: Dict[str, Any] = {}
    for key, value in values.items():
        if key not in known:
            raise SettingError(f"{section}.{key}", Errors.E441.format(section=section, known=", ".join(known)))
        hint = hints[key]
        is_table = typing.get_origin(hint) is dict or hint is dict
        if isinstance(value, Mapping) and not is_table:
            raise SettingError(f"{section}.{key}", Errors.E442)
        try:
            out[key] = _convert(value, hint, known[key].metadata)
        except _Bad as bad:
            raise SettingError(f"{section}.{key}", Errors.E443.format(expected=bad.expected, value=value)) from None
    for key, f in known.items():
        if f.metadata.get("required") and key not in out:
            raise SettingError(f"{section}.{key}", Errors.E444)
    if isinstance(out.get("sampler"), dict) and cls is not SamplerSettings:
        out["sampler"] = check(SamplerSettings, out["sampler"], f"{section}.sampler", partial=True)
    if partial:
        return out  # type: ignore[return-value]
    return cls(**out)


def keyword_signature(cls: type, *leading: str, extra: Sequence[Any] = ()) -> Any:
    """A signature of `leading` positional names plus one keyword per setting of `cls`.

    spaCy (confection) validates a factory's config against the factory's
    signature, so giving a ``**settings`` factory this signature lets the
    settings class be the only place its keys, types and defaults are written.
    `extra` are more `inspect.Parameter`s (e.g. a scorer).
    """
    import inspect

    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in leading]
    hints = hints_of(cls)
    for name, f in fields_of(cls).items():
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default_of(f),
                                        annotation=hints[name]))
    return inspect.Signature(params + list(extra))
