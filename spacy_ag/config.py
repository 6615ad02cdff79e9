"""Config files: spaCy-style (confection) files, read section by section into `spacy_ag.settings`.

Three kinds of config train with ``spacy-ag train`` (`config_kind` tells them apart):

* an **engine** config: ``[paths]``, ``[grammar]``, ``[corpus]``, ``[inference]``,
  ``[sampler]``, ``[online]``, ``[training]`` (`load_training_config`);
* a **topic** config: it has a ``[topics]`` section (`load_topic_config`);
* a **spaCy pipeline** config: it has an ``[nlp]`` section. spaCy reads it
  itself; the sampler settings are in the components' own configs
  (``[nlp.tokenizer]``, ``[components.<name>]``), so ``spacy train`` and
  ``spacy-ag train`` read the same settings (`load_pipeline_config`).

Every key, type, range and default comes from `spacy_ag.settings`. Values are
overridden from the command line with dotted names, as in ``spacy train``
(``--training.iterations 100``). Every mistake (unknown section or key, wrong
type, value out of range) is a `ConfigError` whose message is one line naming
the file and ``section.key``, with the valid keys when a key is unknown.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, FrozenSet, Mapping, Optional, Sequence, Union

from confection import Config, ConfigValidationError

from .errors import ConfigError, Errors
from .settings import (
    SECTIONS, TOPIC_ONLINE_DEFAULTS, TOPIC_SECTIONS, GrammarSettings, OnlineSettings,
    SamplerSettings, SettingError, TrainingSettings, check, defaults,
)

__all__ = [
    "ConfigError",
    "SCHEMA",
    "TrainingConfig",
    "build_model",
    "config_kind",
    "is_pipeline_config",
    "is_topic_config",
    "load_config",
    "load_pipeline_config",
    "load_topic_config",
    "load_training_config",
    "parse_overrides",
    "training_config_from",
]

PathLike = Union[str, "os.PathLike[str]"]

#: Section -> key -> default, derived from `spacy_ag.settings.SECTIONS` (for tools that list keys).
SCHEMA: Dict[str, Dict[str, Any]] = {name: defaults(cls) for name, cls in SECTIONS.items()}

#: The characters of ``split_at = "punctuation"``.
PUNCTUATION_NAME = "punctuation"


@dataclass
class TrainingConfig:
    """Everything an engine run needs, checked and with paths resolved."""

    config_path: Path
    train_path: Optional[Path]
    grammar_path: Path
    grammar: GrammarSettings
    gold_path: Optional[Path] = None
    output: Optional[Path] = None
    split_at: Optional[FrozenSet[str]] = None
    corpus_gold: bool = False
    #: corpus.format: "text", "wordseg-tags" or "wordseg-prepared" (spacy_ag.input_formats)
    corpus_format: str = "text"
    #: [inference]: mode ("mcmc", "vb" or "online"), stream, shuffle_buffer
    inference: str = "mcmc"
    stream: bool = False
    shuffle_buffer: int = 10000
    sampler: SamplerSettings = field(default_factory=SamplerSettings)
    online: OnlineSettings = field(default_factory=OnlineSettings)
    training: TrainingSettings = field(default_factory=TrainingSettings)
    #: The interpolated config with overrides applied and defaults filled in.
    config: Config = field(default_factory=Config)

    # names kept from when these were flat fields
    @property
    def mode(self) -> str:
        return self.grammar.mode

    @property
    def segment_category(self) -> str:
        return self.grammar.segment_category

    @property
    def units(self) -> str:
        return self.grammar.units



# ---------------------------------------------------------------- reading


def parse_overrides(args: Sequence[str]) -> Dict[str, Any]:
    """``["--training.iterations", "10", "--paths.train=x.txt"]`` -> dotted overrides.

    Values are read as JSON when they parse as JSON (numbers, true/false,
    null, quoted strings, lists) and kept as strings otherwise, as spaCy does.
    A flag without a value means true.
    """
    import srsly

    out: Dict[str, Any] = {}
    args = list(args)
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or "." not in arg.lstrip("-").split("=", 1)[0]:
            raise ConfigError(Errors.E008.format(arg=arg))
        name = arg[2:]
        if "=" in name:
            name, raw = name.split("=", 1)
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            raw = args[i + 1]
            i += 1
        else:
            raw = "true"
        name = name.replace("-", "_")
        try:
            value = srsly.json_loads(raw)
        except ValueError:
            value = raw
        out[name] = value
        i += 1
    return out


def one_line(err: Exception) -> str:
    """confection's multi-line message, squeezed into one line."""
    if getattr(err, "errors", None):
        parts = []
        for e in err.errors:
            loc = ".".join(str(x) for x in e.get("loc", []))
            parts.append(f"{loc}: {e.get('msg')}" if loc else str(e.get("msg")))
        title = (err.title or "").strip()
        return (title + ": " if title else "") + "; ".join(parts)
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    lines = [ln for ln in lines if ln != "Config validation error"
             and not ln.startswith("Make sure the sections and values")]
    return "; ".join(lines) or "invalid config"


def _read_text(path: Path) -> str:
    if not path.exists():
        raise ConfigError(Errors.E001.format(path=path))
    if not path.is_file():
        raise ConfigError(Errors.E002.format(path=path))
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(Errors.E003.format(path=path, err=err)) from None


def read_raw(path: PathLike) -> Config:
    """The config file without interpolation (one-line errors)."""
    path = Path(path)
    text = _read_text(path)
    try:
        return Config().from_str(text, interpolate=False)
    except Exception as err:  # configparser errors that confection lets through
        raise ConfigError(Errors.E009.format(path=path, message=one_line(err))) from None


def config_kind(path: PathLike) -> str:
    """"pipeline" (an [nlp] section), "topics" (a [topics] section) or "engine"."""
    raw = read_raw(path)
    if "nlp" in raw:
        return "pipeline"
    if "topics" in raw:
        return "topics"
    return "engine"


def is_pipeline_config(path: PathLike) -> bool:
    return config_kind(path) == "pipeline"


def is_topic_config(path: PathLike) -> bool:
    return config_kind(path) == "topics"


def load_config(path: PathLike, overrides: Optional[Mapping[str, Any]] = None,
                sections: Mapping[str, type] = SECTIONS) -> Config:
    """Read and interpolate a config file, applying dotted overrides checked against `sections`."""
    path = Path(path)
    text = _read_text(path)
    overrides = dict(overrides or {})
    for key in overrides:
        section, _, name = key.partition(".")
        if section not in sections:
            raise ConfigError(Errors.E007.format(path=path, key=key, sections=", ".join(sections)))
        keys = [f.name for f in dataclasses.fields(sections[section])]
        if "." in name or name not in keys:
            raise ConfigError(Errors.E006.format(path=path, key=key, section=section, keys=", ".join(keys)))
    # Read without interpolation first, so that overrides of keys the file
    # leaves out can be added before variables like ${paths.train} resolve.
    try:
        raw = Config().from_str(text, interpolate=False)
        for key, value in overrides.items():
            section, name = key.split(".", 1)
            if not isinstance(raw.get(section, {}), Mapping):
                raise ConfigError(Errors.E009.format(path=path, message=f"[{section}] must be a section"))
            if name not in raw.setdefault(section, {}):
                raw[section][name] = value
        return Config().from_str(raw.to_str(), overrides=overrides, interpolate=True)
    except ConfigError:
        raise
    except (ConfigValidationError, Exception) as err:
        raise ConfigError(Errors.E009.format(path=path, message=one_line(err))) from None


def check_sections(config: Mapping[str, Any], path: Path, sections: Mapping[str, type]) -> Dict[str, Any]:
    """Each section of `config` checked into its settings group (defaults for what is left out)."""
    for name, values in config.items():
        if name not in sections:
            raise ConfigError(Errors.E005.format(path=path, section=name,
                                                 sections=", ".join(f"[{s}]" for s in sections)))
    out = {}
    for name, cls in sections.items():
        try:
            out[name] = check(cls, config.get(name, {}), name)
        except SettingError as err:
            raise ConfigError(Errors.E004.format(path=path, where=err.where, message=err.message)) from None
    return out


def split_characters(value: Optional[str]) -> Optional[FrozenSet[str]]:
    """``split_at``: "punctuation", "" (none) or the characters themselves."""
    from .corpus import DEFAULT_PUNCTUATION

    if not value:
        return None
    if value == PUNCTUATION_NAME:
        return DEFAULT_PUNCTUATION
    return frozenset(value)


def _expand(value: Optional[str]) -> Optional[Path]:
    return Path(os.path.expanduser(value)) if value else None


def training_config_from(config: Mapping[str, Any], path: PathLike) -> TrainingConfig:
    """Validate an (interpolated) engine config; `path` names it in errors and anchors the grammar path."""
    path = Path(path)
    v = check_sections(config, path, SECTIONS)
    grammar, corpus, training = v["grammar"], v["corpus"], v["training"]
    if corpus.gold and corpus.format == "text" and grammar.mode != "chars":
        raise ConfigError(Errors.E009.format(path=path, message='corpus.gold = true needs grammar.mode = "chars" '
                                                                "(gold words are spelled by characters)"))
    if training.burn_in is not None and training.burn_in >= training.iterations:
        raise ConfigError(Errors.E009.format(
            path=path, message=f"training.burn_in must be less than training.iterations ({training.iterations}), "
                               f"got {training.burn_in}; no sample would be kept"))
    grammar_path = Path(os.path.expanduser(grammar.path))
    if not grammar_path.is_absolute():
        grammar_path = path.parent / grammar_path
    filled = Config({name: dataclasses.asdict(group) for name, group in v.items()})
    filled["training"]["eval_at"] = list(training.eval_at)
    return TrainingConfig(
        config_path=path,
        train_path=_expand(corpus.path),
        grammar_path=grammar_path,
        grammar=grammar,
        gold_path=_expand(v["paths"].gold),
        output=_expand(v["paths"].output),
        split_at=split_characters(grammar.split_at),
        corpus_gold=corpus.gold,
        corpus_format=corpus.format,
        inference=v["inference"].mode,
        stream=v["inference"].stream,
        shuffle_buffer=v["inference"].shuffle_buffer,
        sampler=v["sampler"],
        online=v["online"],
        training=training,
        config=filled,
    )


def _as_overrides(overrides) -> Dict[str, Any]:
    if overrides is None:
        return {}
    if not isinstance(overrides, Mapping):
        return parse_overrides(overrides)
    return dict(overrides)


def load_training_config(path: PathLike, overrides: Optional[Union[Mapping[str, Any], Sequence[str]]] = None
                         ) -> TrainingConfig:
    """Read, override, interpolate and validate an engine config.

    `overrides` is a dict of dotted names (``{"training.iterations": 10}``)
    or the raw command-line words (``["--training.iterations", "10"]``).
    """
    config = load_config(path, _as_overrides(overrides))
    return training_config_from(config, path)


def build_model(cfg: TrainingConfig):
    """The untrained `AdaptorGrammar` an engine config describes (grammar read and checked)."""
    from .model import AdaptorGrammar

    g = cfg.grammar
    return AdaptorGrammar(cfg.grammar_path, segment_category=g.segment_category, mode=g.mode,
                          split_at=cfg.split_at, sampler=dataclasses.replace(cfg.sampler),
                          inference=cfg.inference, online=dataclasses.replace(cfg.online), units=g.units,
                          fmt=g.format, default_weight=g.default_weight, default_a=g.default_a,
                          default_b=g.default_b, max_span=g.max_span)


# ---------------------------------------------------------------- topic configs


def load_topic_config(path: PathLike, overrides: Optional[Union[Mapping[str, Any], Sequence[str]]] = None
                      ) -> Dict[str, Any]:
    """A topic config, validated: one settings group per section; ``[online]`` keys the file
    leaves out take the topic defaults (`spacy_ag.settings.TOPIC_ONLINE_DEFAULTS`)."""
    path = Path(path)
    config = load_config(path, _as_overrides(overrides), TOPIC_SECTIONS)
    online = {**TOPIC_ONLINE_DEFAULTS, **dict(config.get("online", {}))}
    v = check_sections({**config, "online": online}, path, TOPIC_SECTIONS)
    v["config"] = Config({name: dataclasses.asdict(group) for name, group in v.items()})
    return v


# ---------------------------------------------------------------- spaCy pipeline configs


def _check_pipeline_override(raw: Config, key: str, path: Path) -> None:
    """An override must name a key or section the config has (as ``spacy train`` should insist);
    a ``...sampler`` section also takes any `SamplerSettings` key."""
    *sections, name = key.split(".")
    node: Any = raw
    for part in sections:
        node = node.get(part) if isinstance(node, Mapping) else None
        if node is None:
            raise ConfigError(Errors.E007.format(path=path, key=key, sections=", ".join(raw)))
    if not isinstance(node, Mapping) or name in node:
        return
    if sections and sections[-1] == "sampler" and name in defaults(SamplerSettings):
        return
    section = ".".join(sections)
    raise ConfigError(Errors.E006.format(path=path, key=key, section=section, keys=", ".join(node) or "no keys"))


def load_pipeline_config(path: PathLike, overrides: Optional[Mapping[str, Any]] = None) -> Config:
    """A pipeline config without interpolation, with dotted overrides applied as ``spacy train`` does.

    A config that still has the withdrawn ``[ag_training]`` section is refused
    with a line saying where its settings go now.
    """
    path = Path(path)
    raw = read_raw(path)
    if "ag_training" in raw or any(k.startswith("ag_training.") for k in (overrides or {})):
        raise ConfigError(Errors.E010.format(path=path))
    for key in overrides or {}:
        _check_pipeline_override(raw, key, path)
    try:
        return Config().from_str(raw.to_str(), overrides=dict(overrides or {}), interpolate=False)
    except Exception as err:
        raise ConfigError(Errors.E009.format(path=path, message=one_line(err))) from None
