"""The ``spacy-ag`` command line (also ``python -m spacy_ag``).

Commands: ``train`` (config-driven MCMC training, spaCy-style dotted
overrides, checkpoints and ``--resume``; or, given a spaCy pipeline config,
a pipeline directory), ``init-config`` (a starting pipeline config),
``segment`` and ``parse`` (apply a trained model, to a file or a
directory), ``check-grammar``, ``evaluate`` (files or a pipeline),
``evaluate-morph`` (morph boundaries against a Morpho Challenge gold file),
``topics``, ``evaluate-topics``, ``tag-topics`` and ``update-topics`` (topic models), ``plot`` (a
training run's trace as a figure) and
``demo`` (a self-contained run on generated data). Each lives in its own module; ``_common`` holds what they share.

Every expected failure (missing file, bad grammar, bad config, damaged model,
unreadable corpus) prints one line ``✘ [code] <message>`` to stderr and exits
with code 1 (the codes are in `spacy_ag.errors`). Set ``SPACY_AG_DEBUG=1`` to get Python tracebacks instead.

The commands are thin faces: training is `spacy_ag.train`, the rest the
library. The heavy modules (numba kernels) are imported inside the commands
that need them, so ``--help`` imports no numba and starts quickly.
"""
from __future__ import annotations

import typer

app = typer.Typer(
    name="spacy-ag",
    help="Adaptor grammars: train by MCMC, segment and parse text, check grammars, score segmentations.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # plain help text: rich markup would take [grammar], [sampler] and E_q[pi] for tags and drop them
    rich_markup_mode=None,
)

# The command modules register themselves on `app` when imported, so `app`
# must exist first; the import order is the order of `spacy-ag --help`.
from . import (  # noqa: E402,F401  (each module adds its commands, in this order)
    train_command, init_config, segment_parse, check_grammar, evaluate, morph, topic_commands, update_topics,
    trace_plot, demo,
)
from ._common import PROG  # noqa: E402

__all__ = ["app", "main"]


def main() -> None:  # console entry point alternative to `app`
    app(prog_name=PROG)
