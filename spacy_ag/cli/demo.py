"""`spacy-ag demo`: a self-contained run (generated corpus, unigram grammar, training, scores)."""
from __future__ import annotations

import json
from pathlib import Path

import typer

from . import app
from ._common import PROG, errors_as_lines, good


DEMO_GRAMMAR = """\
# Unigram word segmentation (docs/algorithms.md 2.1): a sentence is one or more
# words, a word one or more characters. Word has no numbers, so it is adapted
# with [grammar] default_a and default_b of the config.
1 1 Sentence --> Word+
Word --> Char+
1 1 Char --> [:corpus:]
"""

DEMO_CONFIG = """\
# Written by `spacy-ag demo`: unigram segmentation of a generated corpus.
[paths]
train = {train}
gold = {gold}
output = {output}

[grammar]
path = "grammar.lt"
default_a = 0.0001
default_b = 10000
segment_category = "Word"
mode = "chars"

[corpus]
path = ${{paths.train}}
gold = false

[sampler]
collapsed = true
init = "batch"
label_resampling = true

[training]
iterations = {iterations}
chains = {chains}
seed = {seed}
sample_every = 5
checkpoint_every = 50
eval_every = 10
"""


#: What the demo writes into OUTPUT.
DEMO_OUTPUTS = ("corpus/", "grammar.lt", "config.cfg", "training/")


@app.command("demo")
@errors_as_lines
def demo_cli(
    output: Path = typer.Option(Path("spacy-ag-demo"), "--output", "-o",
                                help="Directory for data, config and model"),
    iterations: int = typer.Option(100, "--iterations", "-n", min=2, help="Sampler iterations"),
    chains: int = typer.Option(1, "--chains", min=1, help="Chains (run in parallel on several cores)"),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the sampler (the corpus is fixed)"),
    force: bool = typer.Option(False, "--force", "-F",
                               help="Write into an existing OUTPUT that is not an earlier demo's, replacing its "
                                    "corpus/, grammar.lt, config.cfg and training/; without it such a folder is "
                                    "refused"),
) -> None:
    """Generate a corpus, train a unigram segmenter on it and score it (offline, about a minute).

    OUTPUT may be new, empty or an earlier demo's (it is written over).
    """
    from ..synthetic import generate_corpus, make_lexicon, write_gold, write_raw
    from ..train.foreign_output import refuse_foreign_output
    from ..train.lock import LOCK_FILE

    refuse_foreign_output(output, force, DEMO_OUTPUTS, marker=f"training/{LOCK_FILE}", command="the demo")

    corpus_dir = output / "corpus"
    corpus_dir.mkdir(parents=True, exist_ok=True)
    lexicon = make_lexicon(50, seed=7)
    utterances = generate_corpus(lexicon, 1000, mean_words=3.5, seed=11)
    raw, gold = corpus_dir / "raw.txt", corpus_dir / "gold.txt"
    write_raw(raw, utterances)
    write_gold(gold, utterances)
    (output / "grammar.lt").write_text(DEMO_GRAMMAR, encoding="utf8")
    config_path = output / "config.cfg"
    config_path.write_text(DEMO_CONFIG.format(
        train=json.dumps(str(raw.resolve())), gold=json.dumps(str(gold.resolve())),
        output=json.dumps(str((output / "training").resolve())), iterations=iterations, chains=chains,
        seed=seed), encoding="utf8")
    n_words = sum(len(u) for u in utterances)
    good(f"Generated {len(utterances)} utterances ({n_words} words, a lexicon of {len(lexicon)}) in {corpus_dir}")
    from ..train.engine import train_model

    result = train_model(config_path, output / "training", command_args=(), show_scores=True, force=force)
    typer.echo("First utterances (predicted | gold):")
    for predicted, words in list(zip(result.segmentation, utterances))[:5]:
        typer.echo(f"  {' '.join(predicted):<40} | {' '.join(words)}")
    model_dir = result.output / "model"
    typer.echo("Next:")
    typer.echo(f"  {PROG} segment {model_dir} {raw}")
    typer.echo(f"  {PROG} parse {model_dir} {raw}")
    typer.echo(f"  {PROG} evaluate {result.output / 'segmentation.txt'} {gold}")
    typer.echo(f"  {PROG} train {config_path} --training.iterations 300")
