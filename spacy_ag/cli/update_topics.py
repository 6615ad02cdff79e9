"""`spacy-ag update-topics`: go on learning a trained topic model from new documents, into a new model.

A topic model's vocabulary is open (words are spelled from characters), so
new documents can bring new words into the topics without training again:
`TopicModel.partial_fit` runs one online pass over them (minibatches of the
model's ``online.batch_size``, the corpus size D = every document seen so
far, the new ones included), whether the model was trained online or by
Gibbs sampling. MODEL is what ``topics`` and ``tag-topics`` take (a topic
model directory, a topic training output, or a pipeline directory with an
``ag_topics`` component, `resolve_model_dir`); the output is of the same
kind: a topic model directory, or a copy of the pipeline whose ``ag_topics``
holds the updated model. It is written atomically into a new directory;
MODEL itself is never written.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import typer

from ..archive import replace_directory
from . import app
from ..errors import Errors
from ._common import (
    TOPIC_MODEL, errors_as_lines, good, info, model_archive, require_input_file, resolve_model_dir, warn,
)

#: --format: how DOCS is read ("auto": JSONL for a .jsonl or .json file or a first line that is a JSON object).
DOCUMENT_FORMATS = ("auto", "text", "jsonl")


def read_document_texts(path: Path, fmt: str = "auto") -> List[str]:
    """The text of every document of `path`: each non-blank line (plain text), or each record's
    ``text`` (JSONL; a bad record is one coded line naming its line)."""
    from ..corpus import iter_lines
    from ..input_formats import jsonl_texts, resolve_text_format

    require_input_file(path, "documents file")
    if fmt not in DOCUMENT_FORMATS:
        raise ValueError(Errors.E477.format(formats=', '.join(DOCUMENT_FORMATS), fmt=fmt))
    lines = jsonl_texts(path) if resolve_text_format(path, fmt) == "jsonl" else iter_lines(path)
    return [text for _, text in lines if text.strip()]


def _is_pipeline(path: Path) -> bool:
    return (path / "config.cfg").is_file() and (path / "meta.json").is_file()


def _check_output(output: Path, model_path: Path, pipeline: bool) -> None:
    """Refuse an output that is MODEL (or holds it, or lies inside it) or that is something else than a model
    of the kind to be written, which replacing would destroy."""
    from ..errors import TrainingLayerError

    out, model = output.resolve(), model_path.resolve()
    if out == model or model in out.parents or out in model.parents:
        raise TrainingLayerError(Errors.E161.format(output=output, model=model_path))
    if output.exists():
        kind_ok = _is_pipeline(output) if pipeline else model_archive(output) == output
        if not kind_ok:
            raise TrainingLayerError(Errors.E162.format(
                output=output, what="a spaCy pipeline directory" if pipeline else "a model directory"))


def _topic_component(nlp, model_dir: Path):
    """The ag_topics component of `nlp` whose saved model is `model_dir` (resolve_model_dir's choice)."""
    names = [name for name in nlp.pipe_names if nlp.get_pipe_meta(name).factory == "ag_topics"]
    for name in sorted(names, key=lambda name: name != model_dir.parent.name):
        return nlp.get_pipe(name)
    from ..errors import ModelFileError

    raise ModelFileError(Errors.E153.format(path=model_dir.parent.parent, components=TOPIC_MODEL[1]))


def _update(model, docs: List[List[str]], docs_path: Path, seed: int) -> Tuple[int, int]:
    """One online pass of `model` over `docs`; RETURNS (tokens learned from, tokens skipped)."""
    from ..errors import TrainingLayerError

    if not docs:
        raise TrainingLayerError(Errors.E160.format(path=docs_path, what="every line is blank or holds no word"))
    tokens = sum(len(d) for d in docs)
    known = [[w for w in d if model.can_spell(w)] for d in docs]
    skipped = tokens - sum(len(d) for d in known)
    known = [d for d in known if d]
    if not known:
        raise TrainingLayerError(Errors.E163.format(path=docs_path, skipped=skipped))
    model.partial_fit(known, seed=seed)
    return tokens - skipped, skipped


@app.command("update-topics")
@errors_as_lines
def update_topics_cli(
    model_path: Path = typer.Argument(..., metavar="MODEL", help="Topic model, topic training output or pipeline "
                                                                 "directory with an ag_topics component"),
    docs_path: Path = typer.Argument(..., metavar="DOCS", help="New documents: plain text, one per line (words "
                                                               "separated by spaces), or JSONL records "
                                                               "{\"text\": ...}"),
    output: Path = typer.Option(..., "--output", "-o", help="The updated model: a new topic model directory, or "
                                                            "for a pipeline MODEL a new pipeline directory"),
    fmt: str = typer.Option("auto", "--format", help="auto (JSONL for a .jsonl or .json file or a first line that "
                                                     "is a JSON object, else text), text or jsonl"),
    seed: int = typer.Option(0, "--seed", help="Seed of the online pass's random draws"),
) -> None:
    """Learn from new documents with one online pass (TopicModel.partial_fit) and save the updated model
    to --output, atomically; MODEL stays as it was.

    New words enter the topics; a word with a character the model has never seen cannot (the alphabet is
    fixed by the first training) and is skipped with a warning. For a pipeline MODEL, the documents are
    tokenized by the pipeline, as ag_topics reads them, and the output is the same pipeline with the updated
    topics (spacy.load it).
    """
    from ..topics import TopicModel

    resolved = resolve_model_dir(model_path, TOPIC_MODEL)
    pipeline = model_archive(model_path) is None
    _check_output(output, model_path, pipeline)
    texts = read_document_texts(docs_path, fmt)
    if pipeline:
        import spacy

        nlp = spacy.load(model_path)
        component = _topic_component(nlp, resolved)
        model = component.model
        docs = [d for d in (component.words(doc) for doc in nlp.tokenizer.pipe(texts)) if d]
    else:
        model = TopicModel.load(resolved)
        docs = [d for d in (text.split() for text in texts) if d]
    seen, vocabulary = model.learner.seen, len(model.get_topics()[1])
    learned, skipped = _update(model, docs, docs_path, seed)
    if skipped:
        warn(Errors.W478.format(skipped=skipped, docs_path=docs_path, model_path=model_path))
    if pipeline:
        replace_directory(output, nlp.to_disk)
    else:
        model.save(output)
    info(f"{len(docs)} documents, {learned} tokens: documents seen {seen} -> {model.learner.seen}, words cached "
         f"by the topics {vocabulary} -> {len(model.get_topics()[1])}")
    good(f"Saved the updated {'pipeline' if pipeline else 'topic model'} to {output}")
