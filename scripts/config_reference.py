"""Write docs/configuration.md, the reference of every config setting, from spacy_ag/settings.py.

    python scripts/config_reference.py            # rewrite docs/configuration.md
    python scripts/config_reference.py --check    # exit 1 if the committed file differs

Every setting is defined once, as a field of a settings dataclass with its type, range,
choices, default and help line (`spacy_ag.settings.setting`). This script renders those
fields as tables, one per config section, so that the reference cannot drift from the
code: tests/unit/test_config_reference.py fails when the committed file is not what this
script writes.
"""
from __future__ import annotations

import dataclasses
import json
import re
import sys
import typing
from pathlib import Path
from typing import Any, List, Mapping, Sequence, Tuple, Union

from spacy_ag import settings as S

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "docs" / "configuration.md"

#: The spaCy components and readers and the config block each reads (not derivable from the
#: settings, which do not know the names spaCy registers them under).
COMPONENT_SECTIONS: Sequence[Tuple[str, str, type]] = (
    ("[nlp.tokenizer]", '`@tokenizers = "spacy-ag.Segmenter.v1"`: the word segmenter', S.SegmenterSettings),
    ("[components.NAME]", '`factory = "ag_parser"`: trees and morphs of an adaptor grammar', S.ParserSettings),
    ("[components.NAME]", '`factory = "ag_topics"`: infinite-vocabulary topics', S.TopicComponentSettings),
    ("[corpora.train]", '`@readers = "spacy-ag.TextCorpus.v1"`: raw training text', S.TextCorpusSettings),
    ("[corpora.dev]", '`@readers = "spacy-ag.SegmentedCorpus.v1"`: gold words', S.SegmentedCorpusSettings),
)

#: Groups that are never a config block of their own: their settings are documented in the
#: groups built on them (the segmenter and ag_parser; topic configs and ag_topics).
SHARED_BASES: Tuple[type, ...] = (S.FittedGrammarSettings, S.TopicModelSettings)


def settings_groups() -> List[type]:
    """Every settings dataclass that `spacy_ag.settings` defines."""
    return [value for value in vars(S).values()
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == S.__name__]


def documented_groups() -> List[type]:
    """The groups this reference has a table for."""
    return list(S.SECTIONS.values()) + list(S.TOPIC_SECTIONS.values()) + [cls for _, _, cls in COMPONENT_SECTIONS]


INTRO = """\
# Configuration reference

<!-- Written by scripts/config_reference.py from spacy_ag/settings.py: do not edit by hand. -->

Every setting of spacy-ag, with its type, default, allowed values and meaning. A config file is
read by [confection](https://github.com/explosion/confection), as spaCy reads its own, and every
key can be overridden on the command line with a dotted option (`spacy-ag train config.cfg
--training.iterations 500 --sampler.anneal_start 3`). An unknown key, a value of the wrong type
or out of range is refused with one line naming the section and key and what it takes.

Three kinds of config exist:

* **engine configs** (`configs/*.cfg`, `spacy-ag train`): a grammar trained on a corpus;
* **topic configs** (`configs/topics/de-news.cfg`): a topic model trained on documents;
* **spaCy pipeline configs** (`configs/pipeline-*.cfg`, `spacy-ag init-config`): the components'
  settings live where spaCy reads them, under `[nlp.tokenizer]` and `[components.NAME]`.
"""


def type_text(hint: Any) -> str:
    """A setting's type as a config writer thinks of it (integer, number, list of ...)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Union:
        parts = [type_text(a) for a in args if a is not type(None)]
        if type(None) in args:
            parts.append("null")
        return " or ".join(parts)
    if hint is bool:
        return "bool"
    if hint is int:
        return "integer"
    if hint is float:
        return "number"
    if hint is str:
        return "string"
    if origin in (tuple, list):
        inner = [a for a in args if a is not Ellipsis]
        return "list of " + type_text(inner[0]) if inner else "list"
    if origin is dict:
        return f"table of {type_text(args[1])}" if args and args[1] is not Any else "table"
    if hint is Any:
        return "any"
    return getattr(hint, "__name__", str(hint))


def value_text(value: Any) -> str:
    """A default as it is written in a config file (true, null, "text", [1, 2], {})."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, ensure_ascii=False)


def allowed_text(meta: Mapping[str, Any]) -> str:
    """The range and choices of a setting, e.g. `> 0`, `[0, 1)`, "batch", "incremental"."""
    parts: List[str] = []
    low, high = meta.get("low"), meta.get("high")
    if low is not None and high is not None:
        left = "(" if meta.get("low_open") else "["
        right = ")" if meta.get("high_open") else "]"
        parts.append(f"{left}{low:g}, {high:g}{right}")
    elif low is not None:
        parts.append(f"{'>' if meta.get('low_open') else '≥'} {low:g}")
    elif high is not None:
        parts.append(f"{'<' if meta.get('high_open') else '≤'} {high:g}")
    if meta.get("choices"):
        parts.append(", ".join(f'`"{c}"`' for c in meta["choices"]))
    if meta.get("required"):
        parts.append("required")
    return "; ".join(parts)


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def section_table(cls: type, defaults_override: Mapping[str, Any] = ()) -> str:
    """The Markdown table of one settings group: key, type, default, allowed values, description."""
    hints = S.hints_of(cls)
    overrides = dict(defaults_override)
    rows = ["| key | type | default | allowed | description |", "|---|---|---|---|---|"]
    for name, f in S.fields_of(cls).items():
        default = overrides.get(name, S.default_of(f))
        shown = "" if f.metadata.get("required") and not default else f"`{value_text(default)}`"
        rows.append(f"| `{name}` | {cell(type_text(hints[name]))} | {cell(shown)} | "
                    f"{cell(allowed_text(f.metadata))} | {cell(f.metadata.get('help', ''))} |")
    return "\n".join(rows) + "\n"


def summary(cls: type) -> str:
    """The first line of a settings group's docstring, without the section names the heading gives."""
    line = (cls.__doc__ or "").strip().splitlines()[0]
    line = re.sub(r"^\[[^\]]+\]( of a topic config)?[:.]?\s*", "", line)
    line = re.sub(r" \(\[[^)]*\)", "", line).replace("``", "`")
    return line[:1].upper() + line[1:] + "\n\n" if line.strip(" .") else ""


def render() -> str:
    """The whole of docs/configuration.md."""
    out = [INTRO]
    out.append("## Engine configs\n\n`spacy-ag train CONFIG` with a grammar: sections "
               + ", ".join(f"`[{name}]`" for name in S.SECTIONS) + ".\n")
    for name, cls in S.SECTIONS.items():
        out.append(f"### [{name}]\n\n{summary(cls)}{section_table(cls)}")
    out.append("## Topic configs\n\n`spacy-ag train CONFIG` with a `[topics]` section: sections "
               + ", ".join(f"`[{name}]`" for name in S.TOPIC_SECTIONS) + ".\n")
    for name, cls in S.TOPIC_SECTIONS.items():
        if cls is S.SECTIONS.get(name) and name != "online":
            out.append(f"### [{name}] of a topic config\n\nAs [`[{name}]`](#{name}) of an engine config.\n\n")
            continue
        if name == "online":
            changed = ", ".join(f"`{k}`" for k in S.TOPIC_ONLINE_DEFAULTS)
            out.append(f"### [online] of a topic config\n\nThe keys of an engine config's `[online]`; "
                       f"the defaults of {changed} are the topic model's own.\n\n"
                       f"{section_table(cls, S.TOPIC_ONLINE_DEFAULTS)}")
            continue
        out.append(f"### [{name}] of a topic config\n\n{summary(cls)}{section_table(cls)}")
    out.append("## spaCy components and readers\n\nIn a pipeline config (and in `nlp.add_pipe(NAME, config={...})`). "
               "A `sampler` table takes any key of [`[sampler]`](#sampler), e.g. "
               "`[nlp.tokenizer.sampler]` with `anneal_start = 3.0`.\n")
    for block, what, cls in COMPONENT_SECTIONS:
        out.append(f"### {block}, {what}\n\n{summary(cls)}{section_table(cls)}")
    return "\n".join(out)


def main(argv: Sequence[str]) -> int:
    text = render()
    if "--check" in argv:
        current = REFERENCE.read_text(encoding="utf8") if REFERENCE.exists() else ""
        if current != text:
            print(f"{REFERENCE.relative_to(REPO)} is out of date: run python scripts/config_reference.py",
                  file=sys.stderr)
            return 1
        return 0
    REFERENCE.write_text(text, encoding="utf8")
    print(f"wrote {REFERENCE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
