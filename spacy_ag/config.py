"""Training configs: spaCy-style (confection) files, validated section by section.

A config names the grammar, the training text, the sampler and the run::

    [paths]
    train = "../shared/data/brent/br-phono.txt"   # relative to the working directory
    gold = null                                   # optional gold file to score against
    output = null                                 # default for `train --output`

    [grammar]
    path = "grammars/brent-unigram.lt"            # relative to this config's folder
    format = "auto"                               # auto | pycfg | pyadagram
    default_a = 0.0001                            # a of adapted NTs without numbers
    default_b = 10000                             # b of adapted NTs without numbers
    default_weight = 1                            # weight of rules without numbers
    segment_category = "Word"
    mode = "chars"                                # chars | tokens
    split_at = ""                                 # "punctuation" | "" | characters

    [corpus]
    path = ${paths.train}
    gold = true                                   # the file is gold-segmented

    [inference]
    mode = "mcmc"                                 # mcmc | vb | online
    stream = false                                # online: read corpus.path lazily, one pass

    [sampler]                                     # any SamplerSettings field (mcmc)
    [online]                                      # any OnlineSettings field (vb, online)
    [training]                                    # iterations, chains, seed, ...

Values are overridden from the command line with dotted names, as in
``spacy train``: ``--training.iterations 100 --paths.train x.txt``. Every
mistake (unknown section or key, wrong type, value out of range) is raised as
a `ConfigError` whose message is one line naming the file and ``section.key``.
Keys that are left out take the defaults of `SamplerSettings`,
`TrainingSettings` and the table in `SCHEMA`.

A **spaCy pipeline config** (one with an ``[nlp]`` section, see
`is_pipeline_config`) is trained by `spacy_ag.pipeline_training` instead. Its
sampler settings live in a top-level ``[ag_training]`` section (spaCy's
``[training]`` forbids extra keys), validated by `ag_training_settings`::

    [ag_training]
    iterations = 200        # null: each component's own `iterations`
    chains = 1              # null: each component's own `chains`
    seed = ${system.seed}   # null: each component's own `seed`
    workers = 0             # processes for the chains (0: one per chain)

    [ag_training.sampler]   # any SamplerSettings field, e.g. anneal_start = 3.0
"""
from __future__ import annotations

import dataclasses
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, Mapping, Optional, Sequence, Tuple, Union

from confection import Config, ConfigValidationError

from .core.chain import SamplerSettings
from .core.online import OnlineSettings
from .corpus import DEFAULT_PUNCTUATION
from .training import TrainingSettings

__all__ = [
    "AG_TRAINING_SCHEMA",
    "ConfigError",
    "TrainingConfig",
    "ag_training_settings",
    "build_model",
    "is_pipeline_config",
    "load_pipeline_config",
    "load_config",
    "load_training_config",
    "parse_overrides",
    "training_config_from",
]

PathLike = Union[str, "os.PathLike[str]"]


class ConfigError(ValueError):
    """A config file (or override) that cannot be used; the message is one line."""


# ---------------------------------------------------------------- value checks
#
# A check takes the raw value and returns the converted value, or raises
# _Bad(expectation) so that the caller can name the file and the key.


class _Bad(Exception):
    def __init__(self, expected: str):
        super().__init__(expected)
        self.expected = expected


Check = Callable[[Any], Any]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _str(*, empty: bool = True) -> Check:
    def check(value):
        if not isinstance(value, str) or (not empty and not value.strip()):
            raise _Bad("a non-empty string" if not empty else "a string")
        return value
    return check


def _optional(inner: Check, what: str) -> Check:
    def check(value):
        if value is None:
            return None
        try:
            return inner(value)
        except _Bad:
            raise _Bad(f"{what} or null") from None
    return check


def _bool(value):
    if not isinstance(value, bool):
        raise _Bad("true or false")
    return value


def _int(minimum: Optional[int] = None) -> Check:
    def check(value):
        if not _is_int(value) or (minimum is not None and value < minimum):
            raise _Bad("an integer" + (f" >= {minimum}" if minimum is not None else ""))
        return value
    return check


def _float(low: Optional[float] = None, high: Optional[float] = None, *, low_open: bool = False,
           high_open: bool = False, text: Optional[str] = None) -> Check:
    def check(value):
        ok = (_is_int(value) or isinstance(value, float)) and value == value  # not NaN
        if ok:
            value = float(value)
            ok = value not in (float("inf"), float("-inf"))
        if ok and low is not None:
            ok = value > low if low_open else value >= low
        if ok and high is not None:
            ok = value < high if high_open else value <= high
        if not ok:
            raise _Bad(text or "a number")
        return value
    return check


def _int_list(minimum: int) -> Check:
    def check(value):
        if not isinstance(value, (list, tuple)) or not all(_is_int(v) and v >= minimum for v in value):
            raise _Bad(f"a list of integers >= {minimum}, e.g. [20, 100, 300]")
        return tuple(value)
    return check


def _choice(*options: str) -> Check:
    def check(value):
        if value not in options:
            raise _Bad("one of " + ", ".join(f'"{o}"' for o in options))
        return value
    return check


_PATH = _optional(_str(empty=False), "a path string")

#: section -> key -> (check, default); `_REQUIRED` marks keys without default.
_REQUIRED = object()

SCHEMA: Dict[str, Dict[str, Tuple[Check, Any]]] = {
    "paths": {
        "train": (_PATH, None),
        "gold": (_PATH, None),
        "output": (_PATH, None),
    },
    "grammar": {
        "path": (_str(empty=False), _REQUIRED),
        "format": (_choice("auto", "pycfg", "pyadagram"), "auto"),
        "default_a": (_float(0.0, 1.0, text="a number in [0, 1]"), 0.1),
        "default_b": (_float(0.0, low_open=True, text="a number > 0"), 1000.0),
        "default_weight": (_float(0.0, low_open=True, text="a number > 0"), 1.0),
        "segment_category": (_str(empty=False), "Word"),
        "mode": (_choice("chars", "tokens"), "chars"),
        "split_at": (_optional(_str(), 'a string ("punctuation", "" or the characters themselves)'), ""),
    },
    "corpus": {
        "path": (_PATH, None),  # required by training, not by check-grammar
        "gold": (_bool, False),
    },
    "inference": {
        "mode": (_choice("mcmc", "vb", "online"), "mcmc"),
        "stream": (_bool, False),
        "shuffle_buffer": (_int(0), 10000),
    },
    "sampler": {},  # filled from SamplerSettings below
    "online": {},  # filled from OnlineSettings below
    "training": {
        "iterations": (_int(1), 2000),
        "chains": (_int(1), 1),
        "seed": (_int(0), 0),
        "burn_in": (_optional(_int(0), "an integer >= 0"), None),
        "sample_every": (_int(1), 10),
        "checkpoint_every": (_int(0), 50),
        "eval_every": (_int(0), 0),
        "workers": (_int(0), 0),
    },
}

#: Range checks for sampler fields beyond their type (field -> check).
_SAMPLER_CHECKS: Dict[str, Check] = {
    "init": _choice("batch", "incremental"),
    "beta_e": _float(0.0, low_open=True, text="a number > 0"),
    "beta_f": _float(0.0, low_open=True, text="a number > 0"),
    "gamma_shape": _float(0.0, low_open=True, text="a number > 0"),
    "gamma_scale": _float(0.0, low_open=True, text="a number > 0"),
    "hyper_rounds": _int(0),
    "hyper_iterations": _int(1),
    "hyper_start": _int(1),
    "anneal_start": _float(1.0, text="a number >= 1 (1 = no annealing)"),
    "anneal_iterations": _int(0),
}


def _truncations(value):
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and _is_int(v) and v >= 1
                                                 for k, v in value.items()):
        raise _Bad('a table of adapted nonterminals to integers >= 1, e.g. {"Word": 1500}')
    return dict(value)


#: Range checks for online fields beyond their type.
_ONLINE_CHECKS: Dict[str, Check] = {
    "batch_size": _int(1),
    "tau": _float(0.0, text="a number >= 0"),
    "kappa": _float(0.0, 1.0, text="a number in [0, 1] (0.5 < kappa <= 1 for online)"),
    "samples": _int(1),
    "refine_every": _int(0),
    "truncation": _truncations,
    "default_truncation": _int(1),
    "passes": _int(1),
    "corpus_size": _int(0),
    "statistics_scale": _choice("none", "bias", "tau_kappa"),
    "hyper_iterations": _int(1),
    "workers": _int(0),
}
#: Keys whose value is a table rather than a single value.
_TABLE_KEYS = {("online", "truncation")}


def _settings_schema(cls, checks: Dict[str, Check]) -> Dict[str, Tuple[Check, Any]]:
    hints = typing.get_type_hints(cls)
    by_type = {bool: _bool, int: _int(), float: _float(), str: _str()}
    schema = {}
    for f in dataclasses.fields(cls):
        check = checks.get(f.name) or by_type.get(hints[f.name])
        if check is None:  # a field type this loader does not know: accept any JSON value
            check = lambda value: value  # noqa: E731
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        schema[f.name] = (check, default)
    return schema


SCHEMA["sampler"] = _settings_schema(SamplerSettings, _SAMPLER_CHECKS)
SCHEMA["online"] = _settings_schema(OnlineSettings, _ONLINE_CHECKS)
if "eval_at" in {f.name for f in dataclasses.fields(TrainingSettings)}:
    SCHEMA["training"]["eval_at"] = (_int_list(1), ())  # score at these iterations too


# ---------------------------------------------------------------- the result


@dataclass
class TrainingConfig:
    """Everything `spacy-ag train` needs, checked and with paths resolved."""

    config_path: Path
    train_path: Optional[Path]
    grammar_path: Path
    gold_path: Optional[Path] = None
    output: Optional[Path] = None
    grammar_format: str = "auto"
    default_a: float = 0.1
    default_b: float = 1000.0
    default_weight: float = 1.0
    segment_category: str = "Word"
    mode: str = "chars"
    split_at: Optional[FrozenSet[str]] = None
    corpus_gold: bool = False
    sampler: SamplerSettings = field(default_factory=SamplerSettings)
    inference: str = "mcmc"
    stream: bool = False
    shuffle_buffer: int = 10000
    online: OnlineSettings = field(default_factory=OnlineSettings)
    training: TrainingSettings = field(default_factory=TrainingSettings)
    #: The interpolated config with overrides applied and defaults filled in.
    config: Config = field(default_factory=Config)


# ---------------------------------------------------------------- loading


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
            raise ConfigError(f"unexpected argument {arg!r}: config overrides look like "
                              "--section.key value (e.g. --training.iterations 100)")
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


def _one_line(err: Exception) -> str:
    """confection's multi-line message, squeezed into one line."""
    if getattr(err, "errors", None):
        parts = []
        for e in err.errors:
            loc = ".".join(str(x) for x in e.get("loc", []))
            parts.append(f"{loc}: {e.get('msg')}" if loc else str(e.get("msg")))
        title = (err.title or "").strip()
        return (title + ": " if title else "") + "; ".join(parts)
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]  # any exception
    lines = [ln for ln in lines if ln != "Config validation error"
             and not ln.startswith("Make sure the sections and values")]
    return "; ".join(lines) or "invalid config"


def load_config(path: PathLike, overrides: Optional[Mapping[str, Any]] = None,
                schema: Optional[Dict[str, Dict[str, Tuple[Check, Any]]]] = None) -> Config:
    """Read and interpolate a config file, applying dotted overrides (checked against `schema`)."""
    sections = schema or SCHEMA
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found" if not path.exists()
                          else f"{path}: not a file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read the config file ({err})") from None
    overrides = dict(overrides or {})
    for key in overrides:
        section, _, name = key.partition(".")
        if section not in sections:
            raise ConfigError(f"{path}: unknown section in override --{key}; sections are "
                              + ", ".join(sections))
        if "." in name or name not in sections[section]:
            raise ConfigError(f"{path}: unknown key in override --{key}; [{section}] takes "
                              + ", ".join(sections[section]))
    # Read without interpolation first, so that overrides of keys the file
    # leaves out can be added before variables like ${paths.train} resolve.
    try:
        raw = Config().from_str(text, interpolate=False)
        for key, value in overrides.items():
            section, name = key.split(".", 1)
            if not isinstance(raw.get(section, {}), Mapping):
                raise ConfigError(f"{path}: [{section}] must be a section")
            if name not in raw.setdefault(section, {}):
                raw[section][name] = value
        config = Config().from_str(raw.to_str(), overrides=overrides, interpolate=True)
    except ConfigError:
        raise
    except ConfigValidationError as err:
        raise ConfigError(f"{path}: {_one_line(err)}") from None
    except Exception as err:  # configparser errors that confection lets through
        raise ConfigError(f"{path}: {_one_line(err)}") from None
    return config


def _where(path: Path, section: str, key: Optional[str] = None) -> str:
    return f"{path}: {section}.{key}" if key else f"{path}: [{section}]"


def _validated(config: Mapping[str, Any], path: Path, schema: Optional[Dict] = None) -> Dict[str, Dict[str, Any]]:
    """Each section's values checked and converted, defaults filled in."""
    sections = schema or SCHEMA
    for section, values in config.items():
        if section not in sections:
            raise ConfigError(f"{path}: unknown section [{section}]; sections are "
                              + ", ".join(f"[{s}]" for s in sections))
        if not isinstance(values, Mapping):
            raise ConfigError(f"{path}: [{section}] must be a section, got {values!r}")
    out: Dict[str, Dict[str, Any]] = {}
    for section, keys in sections.items():
        values = dict(config.get(section, {}))
        for key, value in values.items():
            if key not in keys:
                raise ConfigError(f"{_where(path, section, key)} is not a setting; [{section}] takes "
                                  + ", ".join(keys))
            if isinstance(value, Mapping) and (section, key) not in _TABLE_KEYS:
                raise ConfigError(f"{_where(path, section, key)} must be a value, not a subsection")
        out[section] = _checked(values, keys, path, section)
    return out


def _checked(values: Mapping[str, Any], keys: Dict[str, Tuple[Check, Any]], path: Path, section: str
             ) -> Dict[str, Any]:
    """Every key of `keys`: its value checked and converted, or its default (one-line errors)."""
    done = {}
    for key, (check, default) in keys.items():
        if key not in values:
            if default is _REQUIRED:
                raise ConfigError(f"{_where(path, section, key)} is missing; it is required")
            done[key] = default
            continue
        try:
            done[key] = check(values[key])
        except _Bad as bad:
            raise ConfigError(f"{_where(path, section, key)} must be {bad.expected}, "
                              f"got {values[key]!r}") from None
    return done


def _split_at(value: Optional[str]) -> Optional[FrozenSet[str]]:
    if not value:
        return None
    if value == "punctuation":
        return DEFAULT_PUNCTUATION
    return frozenset(value)


def training_config_from(config: Mapping[str, Any], path: PathLike) -> TrainingConfig:
    """Validate an (interpolated) config; `path` names it in errors and anchors the grammar path."""
    path = Path(path)
    v = _validated(config, path)
    grammar, corpus, training = v["grammar"], v["corpus"], v["training"]
    if corpus["gold"] and grammar["mode"] != "chars":
        raise ConfigError(f"{_where(path, 'corpus', 'gold')} = true needs grammar.mode = \"chars\" "
                          "(gold words are spelled by characters)")
    if training["burn_in"] is not None and training["burn_in"] >= training["iterations"]:
        raise ConfigError(f"{_where(path, 'training', 'burn_in')} must be less than training.iterations "
                          f"({training['iterations']}), got {training['burn_in']}; no sample would be kept")
    grammar_path = Path(os.path.expanduser(grammar["path"]))
    if not grammar_path.is_absolute():
        grammar_path = path.parent / grammar_path
    paths = v["paths"]
    filled = Config({section: dict(values) for section, values in v.items()})
    filled["grammar"]["split_at"] = grammar["split_at"] if grammar["split_at"] is not None else ""
    return TrainingConfig(
        config_path=path,
        train_path=Path(os.path.expanduser(corpus["path"])) if corpus["path"] else None,
        grammar_path=grammar_path,
        gold_path=Path(os.path.expanduser(paths["gold"])) if paths["gold"] else None,
        output=Path(os.path.expanduser(paths["output"])) if paths["output"] else None,
        grammar_format=grammar["format"],
        default_a=grammar["default_a"],
        default_b=grammar["default_b"],
        default_weight=grammar["default_weight"],
        segment_category=grammar["segment_category"],
        mode=grammar["mode"],
        split_at=_split_at(grammar["split_at"]),
        corpus_gold=corpus["gold"],
        sampler=SamplerSettings(**v["sampler"]),
        inference=v["inference"]["mode"],
        stream=v["inference"]["stream"],
        shuffle_buffer=v["inference"]["shuffle_buffer"],
        online=OnlineSettings(**v["online"]),
        training=TrainingSettings(**training),
        config=filled,
    )


def load_training_config(path: PathLike, overrides: Optional[Union[Mapping[str, Any], Sequence[str]]] = None
                         ) -> TrainingConfig:
    """Read, override, interpolate and validate a training config.

    `overrides` is a dict of dotted names (``{"training.iterations": 10}``)
    or the raw command-line words (``["--training.iterations", "10"]``).
    """
    if overrides is not None and not isinstance(overrides, Mapping):
        overrides = parse_overrides(overrides)
    config = load_config(path, overrides)
    return training_config_from(config, path)


def build_model(cfg: TrainingConfig):
    """The untrained `AdaptorGrammar` a config describes (grammar read and checked)."""
    from .model import AdaptorGrammar

    return AdaptorGrammar(
        cfg.grammar_path,
        segment_category=cfg.segment_category,
        mode=cfg.mode,
        split_at=cfg.split_at,
        sampler=dataclasses.replace(cfg.sampler),
        inference=cfg.inference,
        online=dataclasses.replace(cfg.online),
        fmt=cfg.grammar_format,
        default_weight=cfg.default_weight,
        default_a=cfg.default_a,
        default_b=cfg.default_b,
    )


def config_text(cfg: TrainingConfig) -> str:
    """The filled config as text (written next to a trained model)."""
    return cfg.config.to_str()


# ---------------------------------------------------------------- spaCy pipeline configs

#: [ag_training] key -> (check, default); "sampler" is a subsection of SamplerSettings fields.
AG_TRAINING_SCHEMA: Dict[str, Tuple[Check, Any]] = {
    "iterations": (_optional(_int(1), "an integer >= 1"), None),
    "chains": (_optional(_int(1), "an integer >= 1"), None),
    "seed": (_optional(_int(0), "an integer >= 0"), None),
    "workers": (_int(0), 0),
}


def _read_raw(path: Path) -> Config:
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found" if not path.exists() else f"{path}: not a file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read the config file ({err})") from None
    try:
        return Config().from_str(text, interpolate=False)
    except Exception as err:  # configparser errors that confection lets through
        raise ConfigError(f"{path}: {_one_line(err)}") from None


def is_topic_config(path: PathLike) -> bool:
    """True if the config file trains a topic model (it has a ``[topics]`` section)."""
    return "topics" in _read_raw(Path(path))


def _auto_or(inner: Check, what: str) -> Check:
    def check(value):
        if value == "auto":
            return value
        try:
            return inner(value)
        except _Bad:
            raise _Bad(what) from None
    return check


#: Topic-model configs: documents (one per line, tokens separated by spaces), the model, the online settings.
TOPIC_SCHEMA: Dict[str, Dict[str, Tuple[Check, Any]]] = {
    "paths": {"train": (_PATH, None), "output": (_PATH, None)},
    "corpus": {"path": (_PATH, None), "heldout_fraction": (_float(0.0, 1.0, high_open=True,
                                                                 text="a number in [0, 1)"), 0.1)},
    "topics": {
        "n_topics": (_int(1), 5),
        "alpha": (_float(0.0, low_open=True, text="a number > 0"), 0.1),
        "a": (_float(0.0, 1.0, high_open=True, text="a number in [0, 1)"), 0.0),
        "b": (_auto_or(_float(0.0, low_open=True), 'a number > 0 or "auto"'), "auto"),
        "passes": (_int(1), 1),
        "local_iterations": (_int(1), 20),
        "top_words": (_int(1), 10),
    },
    "online": {},
    "training": {"seed": (_int(0), 0)},
}


def load_topic_config(path: PathLike, overrides: Optional[Union[Mapping[str, Any], Sequence[str]]] = None
                      ) -> Dict[str, Any]:
    """A topic config, validated: sections as dicts, `online` as `OnlineSettings` with the
    topic defaults ([ZBC14]'s de-news settings) for keys the file leaves out."""
    from .topics.model import TOPIC_DEFAULTS

    schema = dict(TOPIC_SCHEMA)
    schema["online"] = {key: (check, TOPIC_DEFAULTS.get(key, default))
                        for key, (check, default) in SCHEMA["online"].items()}
    if overrides is not None and not isinstance(overrides, Mapping):
        overrides = parse_overrides(overrides)
    path = Path(path)
    config = load_config(path, overrides, schema)
    v = _validated(config, path, schema)
    v["online"] = OnlineSettings(**v["online"])
    v["config"] = Config({section: dict(values) if isinstance(values, dict) else values
                          for section, values in config.items()})
    return v


def is_pipeline_config(path: PathLike) -> bool:
    """True if the config file is a spaCy pipeline config (it has an ``[nlp]`` section)."""
    return "nlp" in _read_raw(Path(path))


def load_pipeline_config(path: PathLike, overrides: Optional[Mapping[str, Any]] = None) -> Config:
    """Read a pipeline config without interpolating it, with dotted overrides applied.

    ``[ag_training]`` gets its defaults first, so ``--ag_training.iterations 50``
    works on a config that leaves the section out; every other override must
    name a key the config has, as in ``spacy train``.
    """
    path = Path(path)
    raw = _read_raw(path)
    section = raw.setdefault("ag_training", {})
    if not isinstance(section, Mapping):
        raise ConfigError(f"{path}: [ag_training] must be a section")
    for key, (_, default) in AG_TRAINING_SCHEMA.items():
        section.setdefault(key, default)
    section.setdefault("sampler", {})
    overrides = dict(overrides or {})
    for key in overrides:
        if key.startswith("ag_training.") and key.count(".") == 1 and key.split(".", 1)[1] not in section:
            raise ConfigError(f"{path}: unknown key in override --{key}; [ag_training] takes "
                              + ", ".join(list(AG_TRAINING_SCHEMA) + ["sampler.<field>"]))
        if key.startswith("ag_training.sampler."):
            name = key.split(".", 2)[2]
            if name not in SCHEMA["sampler"]:
                raise ConfigError(f"{path}: unknown key in override --{key}; [ag_training.sampler] takes "
                                  + ", ".join(SCHEMA["sampler"]))
            section["sampler"].setdefault(name, SCHEMA["sampler"][name][1])
    try:
        return Config().from_str(raw.to_str(), overrides=overrides, interpolate=False)
    except ConfigValidationError as err:
        raise ConfigError(f"{path}: {_one_line(err)}") from None
    except Exception as err:
        raise ConfigError(f"{path}: {_one_line(err)}") from None


def ag_training_settings(config: Mapping[str, Any], path: PathLike):
    """The checked ``[ag_training]`` section of an *interpolated* pipeline config.

    RETURNS (spacy_ag.components.fitting.FitSettings): The settings.
    """
    from .components.fitting import FitSettings

    path = Path(path)
    section = config.get("ag_training", {})
    if not isinstance(section, Mapping):
        raise ConfigError(f"{path}: [ag_training] must be a section")
    known = list(AG_TRAINING_SCHEMA) + ["sampler"]
    for key, value in section.items():
        if key not in known:
            raise ConfigError(f"{_where(path, 'ag_training', key)} is not a setting; [ag_training] takes "
                              + ", ".join(known))
        if key != "sampler" and isinstance(value, Mapping):
            raise ConfigError(f"{_where(path, 'ag_training', key)} must be a value, not a subsection")
    values = _checked(section, AG_TRAINING_SCHEMA, path, "ag_training")
    sampler = section.get("sampler") or {}
    if not isinstance(sampler, Mapping):
        raise ConfigError(f"{_where(path, 'ag_training', 'sampler')} must be a section")
    checked = {}
    for key, value in sampler.items():
        if key not in SCHEMA["sampler"]:
            raise ConfigError(f"{_where(path, 'ag_training.sampler', key)} is not a sampler setting; "
                              "[ag_training.sampler] takes " + ", ".join(SCHEMA["sampler"]))
        try:
            checked[key] = SCHEMA["sampler"][key][0](value)
        except _Bad as bad:
            raise ConfigError(f"{_where(path, 'ag_training.sampler', key)} must be {bad.expected}, "
                              f"got {value!r}") from None
    return FitSettings(sampler=checked, **values)
