"""Every error spacy-ag raises on purpose: one base class, one coded table, spaCy's style.

A message is a template in `Errors`; reading ``Errors.E012`` gives it with
its code in front (``"[E012] ..."``), as in spaCy's own ``spacy.errors``. The
exception classes subclass ValueError, so callers that catch ValueError keep
working; the CLI prints ``✘ [code] message`` on one line (and a traceback
only with ``SPACY_AG_DEBUG=1``). An exception raised with a message that has
no code of its own carries its class's code.

This module imports nothing, so every floor of the package can use it.
"""
from __future__ import annotations

__all__ = ["AnnotationError", "ConfigError", "Errors", "ModelFileError", "SpacyAgError", "TextError", "TrainingLayerError", "coded"]


class _WithCodes(type):
    def __getattribute__(cls, name: str):
        value = type.__getattribute__(cls, name)
        if len(name) == 4 and name[0] in "EW" and name[1:].isdigit():
            return f"[{name}] {value}"
        return value


class Errors(metaclass=_WithCodes):
    # ---- configs and settings (E001-E029)
    E001 = "{path}: config file not found"
    E002 = "{path}: not a file"
    E003 = "{path}: cannot read the config file ({err})"
    E004 = "{path}: {where} {message}"
    E005 = "{path}: unknown section [{section}]; sections are {sections}"
    E006 = "{path}: unknown override --{key}; [{section}] takes {keys}"
    E007 = "{path}: unknown section in override --{key}; sections are {sections}"
    E008 = "unexpected argument {arg!r}: config overrides look like --section.key value (e.g. --training.iterations 100)"
    E009 = "{path}: {message}"
    E010 = ("{path}: [ag_training] is no longer read; move its settings into the components: iterations, "
            "chains, seed and workers to [nlp.tokenizer] or [components.<name>], the sampler settings to "
            "[nlp.tokenizer.sampler] or [components.<name>.sampler]")
    E011 = "{where}: {key!r} is not a setting of {what}; it takes {keys}"
    E012 = "{where}: {key} {message}"
    # ---- training runs (E030-E059)
    E030 = "{path}: no output directory; pass --output DIR or set paths.output"
    E031 = "{path}: corpus.path is not set; give the training file with --paths.train FILE"
    E032 = "{path}: {what} not found: {file}"
    E033 = "output {path} exists and is not a directory"
    E034 = "--resume: no checkpoints in {path}; train without --resume to start a new run"
    E035 = ("--resume: the checkpoints in {path} are of a run with another {what} ({was} there, {now} now); "
            "train with the settings of that run, or without --resume into a new --output")
    E037 = "{path}: no text to train on"
    E038 = "{path} is a spaCy pipeline config: resume it with `spacy train`'s own checkpoints, not --resume"
    E039 = "pass the output directory with --output DIR"
    E042 = "backend = \"ray\" needs Ray, which is not installed here: pip install spacy-ag[ray]"
    E043 = ("cannot join the Ray cluster {address} ({err}); start one with `ray start --head`, or set "
            "ray_address to a running cluster's address (null: start a local one)")
    E044 = ("chain {chain} was lost {times} times on the Ray cluster (last: {err}); it stopped at its last "
            "checkpoint, iteration {iteration}; check the cluster's nodes, then resume the run")
    E045 = "{path}: {what} is a directory; give the file itself"
    E049 = ("an E-step worker was lost {times} times on the Ray cluster (last: {err}); the last checkpoint "
            "holds every finished minibatch: check the cluster's nodes, then resume the run")
    E046 = "{path}:{line}: not a JSON object ({err}); a JSONL corpus has one {{\"text\": \"...\"}} per line"
    E047 = "{path}:{line}: the record has no \"text\"; a JSONL corpus has one {{\"text\": \"...\"}} per line"
    E048 = "{path}:{line}: \"text\" is {found}, not a string; a JSONL corpus has one {{\"text\": \"...\"}} per line"
    E040 = ("{path}: the pipeline config is incomplete ({err}); spaCy needs all its sections: fill it with "
            "`python -m spacy init fill-config {path} {path}`, or start from `spacy-ag init-config`")
    E041 = ("output {path} is in use: another run holds its lock{holder}; wait for that run to end, or train "
            "into another --output")
    # ---- model archives (E060-E079)
    E060 = "{path}: no such model directory"
    E061 = "{path}: damaged or not a spacy-ag {kind} archive ({err}); retrain or restore it from a backup"
    E062 = ("{path}: a {found!r} archive of format {version!r}, expected a {kind!r} archive of format "
            "{expected}; use the spacy-ag version that wrote it")
    E063 = "{path}: the grammar does not match the state (grammar hash {found}, expected {expected}); " \
           "restore the grammar.lt that was saved with the model, or retrain"
    E064 = "{path}: array {name!r} is {found}, expected {expected}; the model file is damaged"
    E065 = "{path}: incomplete model header ({err})"
    E066 = "{path}: {name} missing; the model is incomplete"
    # ---- model arrays checked against the grammar (spacy_ag.state_checks)
    E067 = ("{path}: array {name!r} is {found}, expected {expected}; the model file is damaged or not of this "
            "grammar")
    E068 = "{path}: {name}[{index}] ({counter}) is {value}, expected {expected}; the model file is damaged"
    E069 = "{path}: array {name!r} holds {value} at index {index}, expected {expected}; the model file is damaged"
    E070 = "{path}: array {name!r} at index {index}: {problem}; the model file is damaged"
    E071 = ("{path}: array {name!r} holds {found} at index {index}, but the trees in the state give {expected}; "
            "the model file is damaged")
    E072 = "{path}: {what}; retrain the model or restore it from a backup"
    E073 = ("{path}: a Gibbs checkpoint of another corpus, seed or number of topics; train afresh without "
            "--resume, or into another --output")
    # ---- text (E110-E129)
    E120 = ("{source}: a run of {n} terminals without a boundary is too long to parse with this grammar (at "
            "most {limit}: without a max_span on every adapted nonterminal, time grows with the cube of the "
            "length); set max_span (or `@ NT max_span=N` in the grammar) and retrain, or split such lines, "
            "e.g. at punctuation (split_at, boundary_chars)")
    E121 = ("{source}: a run of {n} terminals without a boundary would need {need:.1f} GiB of charts (at most "
            "{gib:.0f} GiB); split such lines, e.g. at punctuation (split_at, boundary_chars), or shorten them")
    E110 = ("{where}: lone surrogate U+{code:04X} at character {column}: not Unicode text; decode the input "
            "as UTF-8 with errors='strict' or 'replace', not 'surrogateescape'")
    E111 = "{path}:{line}: not valid UTF-8 ({what} at column {column})"
    E112 = "unknown text units {units!r}; use one of {choices}"
    E113 = ("{source}: the corpus was read as {found} but the model's terminals are {expected}; read it with "
            "units={expected!r}")
    # ---- annotating a directory (E130-E139)
    E130 = "{path}: input directory not found"
    E131 = "{path} is a directory: give --output DIR, where one output file per input file is written"
    E132 = ("--output {output} is inside the input directory {input}: a rerun would read the output as input; "
            "write it outside")
    E133 = "--output {path} is a file; with a directory INPUT the output is a directory"
    E134 = ("a Ray worker was lost {times} times (last: {err}); the complete shards are kept: check the "
            "cluster's nodes, then run the command again to write the others")
    # ---- input formats: plain text, JSONL, wordseg's tagged and prepared text; what a MODEL argument is (E150-E159)
    E150 = "{path}:{line}: looks like wordseg tagged text (a ';eword' token) but is read as {expected}; {fix}"
    E151 = ("{path}:{line}: a {tag!r} tag in wordseg prepared text (units separated by spaces, no tags); read the "
            "file as wordseg tagged text: {fix}")
    E152 = ("{path}:{line}: the unit {unit!r} is {n} characters, but {reader} makes every character a terminal, so a "
            "word boundary could fall inside it; {fix}")
    E153 = ("{path}: neither a model directory, a training output holding model/, nor a pipeline directory with a "
            "fitted {components}; give one of those")
    # ---- gold words that are not segmented (E170-E179)
    E170 = ("{path}: corpus.gold = true reads this file as gold-segmented text, but {single} of its first {lines} "
            "non-blank lines are a single word (no space between words), so every line would be scored as one "
            "word; the file looks unsegmented: train on it with --corpus.gold false (and give its gold words with "
            "--paths.gold FILE), or give the gold-segmented file")
    E171 = ("{path}: paths.gold gives the gold words, but {single} of its first {lines} non-blank lines are a single "
            "word (no space between words), so every line would be scored as one word; give the gold-segmented "
            "file (words separated by spaces), or leave paths.gold out")
    E154 = ("{path}: the model's terminals are space-separated tokens (grammar.mode = \"tokens\"), which gold words "
            "do not show; give GOLD as wordseg's tagged text (--gold-format wordseg-tags), or score the output of "
            "`spacy-ag segment MODEL PREPARED --format wordseg` against GOLD")
    # ---- pictures: tree pages, training plots, the offline pyLDAvis page (E140-E149)
    E140 = "spacy-ag plot needs matplotlib, which is not installed here: pip install spacy-ag[plot]"
    E141 = "{path}: no trace.jsonl here; give the output directory of `spacy-ag train` (or its trace.jsonl)"
    E142 = ("{path}:{line}: not a trace line ({err}); trace.jsonl has one JSON object per line, as `spacy-ag "
            "train` writes it")
    E143 = ("{path}: no trace line has an iteration, sweep or minibatch to plot; train for at least one "
            "step (an online run traces every online.refine_every minibatches)")
    E144 = ("--svg draws the trees of one text file or stdin, not of the directory {path}; give one file, or "
            "leave --svg out")
    E145 = ("the Doc has no trees of ag_parser in doc.spans[{key!r}]; process it with a pipeline that has an "
            "ag_parser, or pass spans_key= the component's spans_key")
    E146 = ("jupyter=True shows the trees with IPython, which is not installed here: pip install ipython, or "
            "call render_tree(..., jupyter=False) for the HTML")
    E147 = ("{path}: pyLDAvis's {what} is missing from its package, so the page cannot be written offline; "
            "reinstall it: pip install --force-reinstall 'spacy-ag[ldavis]'")

    # ---- update-topics: a topic model updated online with new documents (E160-E169)
    E160 = ("{path}: no document with a word to learn from ({what}); give one document per line, its words "
            "separated by spaces, or JSONL records {{\"text\": ...}} in a .jsonl file")
    E161 = ("--output {output} is where MODEL {model} is read from; write the updated model to a new path, so that "
            "the model it was updated from stays as it was")
    E162 = ("--output {output} exists and is not {what}; refusing to replace it: give a new path, or remove it "
            "first")
    E163 = ("{path}: every token of the new documents has a character the model has never seen ({skipped} tokens "
            "skipped), so there is nothing to learn; the model's alphabet is fixed when it is first trained: train "
            "a new model on documents that hold these characters")

    # ---- model files that cannot exhaust memory or time: sizes, header fields, missing parts (E190-E199)
    E190 = ("{path}: member {member} holds {found} bytes uncompressed, but header.json declares {expected} ({what}); "
            "refused before inflating it: the model file is damaged or was edited, retrain it or restore it from a "
            "backup")
    E191 = ("{path}: member {member!r} is not {what}; refused without reading it: the model file is damaged or "
            "was edited, retrain it or restore it from a backup")
    E192 = ("{path}: {member} would take {size} bytes, more than the {limit} a spacy-ag model file can hold there; "
            "refused without reading it: the model file is damaged or not spacy-ag's")
    E193 = ("{path}: {problem}; the model file is damaged or was edited: retrain it or restore it from a backup")
    E194 = ("{path}: {part} is missing; the pipeline {pipeline} is incomplete (a part was not copied or was removed): "
            "save it again with nlp.to_disk, or copy the whole directory")
    E195 = ("{path}: header.json says {key} = {value!r}, but grammar.lt has {found}; the model file is damaged or "
            "was edited: retrain it or restore it from a backup")


def coded(code: str, message: str) -> str:
    """`message` with `code` in front, unless it already has a code."""
    return message if message.startswith("[") else f"[{code}] {message}"


class SpacyAgError(ValueError):
    """Base of every spacy-ag error; `code` is the message's code (E001, ...)."""

    code = "E000"

    def __init__(self, message: str = ""):
        if message.startswith("[E") and "]" in message:
            self.code = message[1:message.index("]")]
        super().__init__(message)

    def coded_line(self) -> str:
        """The message on one line, with its code."""
        return coded(self.code, " ".join(str(self).split()))


class ConfigError(SpacyAgError):
    """A config file or override that cannot be used."""

    code = "E009"


class ModelFileError(SpacyAgError):
    """A saved model, archive or checkpoint that cannot be read."""

    code = "E061"


class TextError(SpacyAgError):
    """Text that cannot be read as terminals (a lone surrogate, bytes that are not UTF-8)."""

    code = "E110"


class TrainingLayerError(SpacyAgError):
    """A training run that cannot start or continue as asked."""

    code = "E030"


class AnnotationError(SpacyAgError):
    """A directory of text that cannot be annotated as asked."""

    code = "E130"
