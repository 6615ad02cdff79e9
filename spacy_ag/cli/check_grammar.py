"""`spacy-ag check-grammar`: validate a grammar, check it covers a corpus, summarise or expand it."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

import typer

from ..settings import GrammarSettings, defaults, help_of
from . import app
from ._common import checked_choice, errors_as_lines, good, require_input_file


def _number(value: float) -> str:
    return f"{value:g}"


def _help(name: str, flag: str) -> str:
    """An option's help from `GrammarSettings`: its help line and default."""
    return f"{help_of(GrammarSettings, name)} ({flag}; default {defaults(GrammarSettings)[name]:g})"


@app.command("check-grammar")
@errors_as_lines
def check_grammar_cli(
    grammar_path: Path = typer.Argument(..., metavar="GRAMMAR",
                                        help="Grammar file (py-cfg or PyAdaGram), or a training config (.cfg)"),
    corpus: Optional[Path] = typer.Option(None, "--corpus",
                                          help="Check that the grammar covers this corpus (with a config: "
                                               "default corpus.path)"),
    mode: Optional[str] = typer.Option(None, "--mode", help="How the corpus is read: chars (default) or tokens"),
    fmt: Optional[str] = typer.Option(None, "--format", help="auto (default), pycfg or pyadagram"),
    expand: bool = typer.Option(False, "--expand",
                                help="Print the expanded grammar in plain py-cfg format instead of the summary"),
    default_a: Optional[float] = typer.Option(None, "--default-a", help=_help("default_a", "py-cfg -a")),
    default_b: Optional[float] = typer.Option(None, "--default-b", help=_help("default_b", "py-cfg -b")),
    default_weight: Optional[float] = typer.Option(None, "--default-weight", help=_help("default_weight", "py-cfg -w")),
) -> None:
    """Validate a grammar (and its coverage of a corpus) and summarise it.

    Given a training config instead of a grammar, the grammar settings
    (path, format, default a/b/weight, mode, split_at) and the corpus come
    from the config; options given here still win.
    """
    from ..config import load_training_config
    from ..corpus import read_corpus
    from ..grammar import describe, detect_format, expand_corpus_class, has_corpus_class, read_grammar, write_pycfg
    from ..grammar.checks import uncovered_error

    g = GrammarSettings()
    split_at = None
    config_corpus = None  # the config's corpus, read as training reads it (corpus.format)
    if grammar_path.suffix == ".cfg":
        cfg = load_training_config(grammar_path)
        g = cfg.grammar
        split_at = cfg.split_at
        if corpus is None and cfg.train_path is not None and cfg.train_path.is_file():
            corpus = cfg.train_path
            if mode is None:
                from ..train.engine import training_corpus

                config_corpus = training_corpus(cfg)[0]
        grammar_path = cfg.grammar_path
    settings = {"fmt": g.format, "mode": g.mode, "default_a": g.default_a, "default_b": g.default_b,
                "default_weight": g.default_weight}
    given = {"fmt": fmt, "mode": mode, "default_a": default_a, "default_b": default_b,
             "default_weight": default_weight}
    settings.update({k: v for k, v in given.items() if v is not None})
    checked_choice(settings["mode"], ("chars", "tokens"), "--mode")
    checked_choice(settings["fmt"], ("auto", "pycfg", "pyadagram"), "--format")
    require_input_file(grammar_path, "grammar file", stream_ok=True)
    grammar = read_grammar(grammar_path, fmt=settings["fmt"], default_a=settings["default_a"],
                           default_b=settings["default_b"], default_weight=settings["default_weight"])
    has_class = has_corpus_class(grammar)
    corpus_note = None
    if corpus is not None:
        require_input_file(corpus, "corpus file")
        text = config_corpus if config_corpus is not None else read_corpus(corpus, mode=settings["mode"],
                                                                            split_at=split_at, units=g.units)
        alphabet = text.alphabet()
        if has_class:
            grammar = expand_corpus_class(grammar, alphabet)
        known = set(grammar.terminals)
        missing = sorted(((text.first_line_of(t), t) for t in alphabet if t not in known))
        if missing:
            raise uncovered_error(grammar, {t: line for line, t in missing}, str(corpus), settings["mode"])
        unit = "characters" if settings["mode"] == "chars" else "tokens"
        corpus_note = (f"The grammar covers {corpus}: {sum(1 for p in text.pieces if p)} non-empty lines, "
                       f"{len(alphabet)} distinct {unit}")
    if expand:
        typer.echo(write_pycfg(grammar, include_options=True), nl=False)
        return

    summary = describe(grammar)
    shown_fmt = settings["fmt"]
    if shown_fmt == "auto":
        shown_fmt = detect_format(grammar_path.read_text(encoding="utf-8-sig"))
    rows: List[Tuple[str, str]] = [
        ("Start symbol", summary["start"]),
        ("Nonterminals", f"{len(summary['nonterminals'])}: {', '.join(summary['nonterminals'])}"),
        ("Adapted", str(len(summary["adapted"]))),
    ]
    for symbol, params in summary["adapted"].items():
        extra = "".join(f"  {k}={_number(v)}" for k, v in params.items() if k not in ("a", "b"))
        rows.append((f"  {symbol}", f"a={_number(params['a'])}  b={_number(params['b'])}{extra}"))
    terminals = str(summary["terminals"])
    if has_class and corpus is not None:
        terminals += f" ([:corpus:] expanded with the characters of {corpus})"
    elif has_class:
        terminals += " + [:corpus:] (one rule per character of the training corpus)"
    rows.append(("Terminals", terminals))
    rows.append(("Rules", str(summary["rules"])))
    for parent, count in summary["rules_per_parent"].items():
        rows.append((f"  {parent}", f"{count} rule{'s' if count != 1 else ''}"))
    width = max(len(label) for label, _ in rows)
    typer.secho(f"Grammar {grammar_path} ({shown_fmt})", bold=True)
    for label, value in rows:
        typer.echo(f"{label:<{width}}  {value}")
    good("The grammar is valid")
    if corpus_note:
        good(corpus_note)
