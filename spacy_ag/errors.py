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

__all__ = ["AnnotationError", "ConfigError", "Errors", "ModelFileError", "OutputWriteError", "SpacyAgError", "TextError",
           "TrainingLayerError", "coded", "split_code", "with_place"]


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
    E008 = ("unexpected argument {arg!r}: config overrides look like --section.key value (e.g. "
            "--training.iterations 100)")
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
    # ---- model arrays checked against the grammar (spacy_ag.core.state_checks)
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
    E074 = '{source}: not a spacy-ag state (missing {missing}); was it written by another program?'
    E075 = '{source}: state does not match {grammar_source}'
    E076 = '{path}: file not found'
    E077 = '{source}: not the settings of a spacy-ag {kind}'
    E078 = '{source}: settings of version {found!r}, expected {expected}; use the spacy-ag version that wrote it'
    E079 = '{source}: damaged data ({err})'
    # ---- text (E110-E129)
    E120 = ("{source}: a run of {n} terminals without a boundary is too long to parse with this grammar (at "
            "most {limit}: without a max_span on every adapted nonterminal, time grows with the cube of the "
            "length); set max_span (or `@ NT max_span=N` in the grammar) and retrain, or split such lines, "
            "e.g. at punctuation (split_at, boundary_chars)")
    E121 = ("{source}: a run of {n} terminals without a boundary would need {need:.1f} GiB of charts (at most "
            "{gib:.0f} GiB); split such lines, e.g. at punctuation (split_at, boundary_chars), or shorten them")
    E122 = ("{source}: line {line} has {n} terminals without a boundary; training on it would take about "
            "{need:.1f} GiB, more than the {free:.1f} GiB this process can still allocate; split such lines, "
            "e.g. at punctuation (split_at, boundary_chars), or train where more memory is free")
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

    # ---- resume: a checkpoint continues only the run that wrote it (E180-E189)
    E180 = ("--resume: {path} is a checkpoint of another run ({what}: {was} there, {now} now); train without "
            "--resume to start this run afresh")
    E181 = ("--resume: {path} is a checkpoint that does not say which run wrote it (an earlier spacy-ag, or "
            "another program), so it cannot continue this one; train without --resume to start afresh")

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
    E196 = '{p}: damaged settings file ({err})'
    E197 = '{source}: damaged settings ({err})'

    # ---- output safety: streams as inputs, full disks, outputs spacy-ag did not write (E200-E219)
    E200 = ("{path}: {what} is {kind}, not a regular file; training reads it more than once (its SHA-256 "
            "fingerprints the run for --resume, then the text is read), and a pipe or /dev/stdin fed by one can be "
            "read only once: save it to a file first (e.g. `cat > corpus.txt`) and give that file")
    E201 = ("{path}: {what} is {kind}, not a regular file, and this command reads it more than once, which a pipe "
            "or /dev/stdin fed by one allows only once: save it to a file first and give that file")
    E202 = ("{path}: cannot write: {reason}; {todo}, then run the command again (the outputs written whole "
            "before stay; no partial file is left)")
    E203 = ("output {path} holds files spacy-ag did not write ({listing}); {command} writes {writes} there, "
            "replacing anything of the same name: give a new or empty --output directory, or pass --force to "
            "write into this one anyway")
    E204 = ("--output {path} holds shards of {was} ({manifest}), but this run is {now}; complete shards are "
            "skipped, so the output would mix both: give a new --output directory, or pass --force to rewrite "
            "every shard")
    E205 = ("--output {path} holds {count} shard{s} of INPUT (first: {first}) but no record of what made them "
            "({manifest}: written by hand, or by a spacy-ag that did not record it), so a rerun cannot tell "
            "whether they match: give a new --output directory, or pass --force to rewrite every shard")
    E206 = ("{path}: topic coherence (PMI, NPMI) cannot be computed, so it is reported as n/a: {reason}; {todo}")

    # ---- grammar files: reading, checking and writing py-cfg and PyAdaGram grammars (E300-E379)
    E300 = 'the grammar has no rules; a rule looks like {RULE_SHAPE}'
    E301 = "missing '-->'; a rule looks like {RULE_SHAPE}"
    E302 = 'default_weight must be a positive number, got {weight!r}'
    E303 = 'default_a must be in [0, 1], got {a!r}'
    E304 = 'default_b must be > 0, got {b!r}'
    E305 = 'unknown grammar format {fmt!r}; use one of {formats}'
    E306 = '{what} must be a finite number, got {token!r}'
    E307 = 'weight w = {token} of {parent} must be a finite number > 0; write a positive weight such as 1'
    E308 = ("weight w = {token} of {parent} must be > 0; write a positive weight such as 1 (py-cfg silently reads "
            "w <= 0 as the default weight; the numbers are w a b, so `1 0 {parent} --> ...` is weight 1 with "
            "discount a = 0)")
    E309 = 'discount a = {a!r} is outside {bound}; 0 gives a Dirichlet process'
    E310 = 'concentration b = {b!r} must be > 0 (e.g. 1000)'
    E311 = "missing '-->': put a space between the parent and --> ({RULE_SHAPE})"
    E312 = "missing '-->': py-cfg rules use -->, not -> (for a PyAdaGram file use fmt='pyadagram')"
    E313 = 'missing parent before -->; a rule looks like {RULE_SHAPE} and a parent must not look like a number'
    E314 = 'too many numbers before {parent} ({n_fields}); at most three: w a b'
    E315 = 'empty right-hand side: write at least one symbol after {parent} -->'
    E316 = 'adaptor directive without a nonterminal; write {example}'
    E317 = 'directive for {symbol} sets nothing; write {example}'
    E318 = 'max_span={span:g}: the longest yield must be a whole number of terminals, at least 1'
    E319 = ("parent names ending in '+' are reserved for the shorthand ({parent} means one or more {base}); "
            "rename {parent}")
    E320 = 'adaptor line must be `@ Nonterminal K concentration discount`, e.g. `@ Word 1500 100 0`'
    E321 = 'truncation K = {truncation} must be at least 1 (e.g. 1500)'
    E322 = 'py-cfg \'-->\' in a PyAdaGram file; write `A -> B "c"` or read the file with fmt=\'pycfg\''
    E323 = 'expected `Parent -> children` (NLTK syntax, terminals in double quotes)'
    E324 = ('unknown symbol {token!r}: it is never a parent; {spelling}quote it if it is a terminal ("{token}") '
            "or add rules for it")
    E325 = '{CORPUS_CLASS} was given an empty alphabet; pass the training corpus'
    E326 = 'no such grammar file; check the path'
    E327 = 'cannot read the grammar file ({error}); it must be UTF-8 text'
    E328 = '{what} {token!r} is not a number'
    E329 = 'weight w {token!r} is not a number'
    E330 = 'directive setting {token!r} must be key=value, as in {example}'
    E331 = 'unknown symbol {symbol!r} in adaptor directive; it must name a nonterminal that has rules ({spelling})'
    E332 = ("directive for {symbol}, which is not adapted (a = 1 on its rule lines); remove the directive or drop "
            "the a = 1 from {symbol}'s rules")
    E333 = 'unknown symbol {symbol!r} in adaptor line; it must name a nonterminal that has rules{spelling}'
    E334 = 'empty right-hand side for {parent}; write at least one symbol after ->'
    E335 = 'unterminated quote in {token!r}; write terminals as "x"'
    E336 = 'terminal {token} must be non-empty and contain no whitespace'
    E337 = 'terminal {token} has the name of a nonterminal; rename the nonterminal {terminal}'
    E338 = 'alphabet symbol {letter!r} must be a non-empty string without whitespace'
    E339 = 'corpus symbol {letter!r} is also a nonterminal name; rename the nonterminal'
    E340 = '{never_a_parent} one edit away from the nonterminal {hint}{suggestion}'
    E341 = 'mode must be one of {MODES}, got {mode!r}'
    E342 = ("{described} is produced by no rule of {grammar}{also}; add a rule such as `1 1 {parent} --> "
            "{terminal}` or `1 1 {parent} --> {CORPUS_CLASS}`")
    E343 = 'give corpus_lines or corpus_path'
    E344 = 'cannot read the corpus: {strerror}'
    E345 = 'parent {parent!r} looks like a number; py-cfg would read it as a weight'
    E346 = 'symbol {symbol!r} cannot be written in py-cfg format (empty, whitespace or leading -->)'
    E347 = 'terminal {child!r} would read back as shorthand; rename it'
    E348 = 'segmentation category {spec!r} names no nonterminal'
    E349 = '{what} {unknown} is not a nonterminal of the grammar; choose among {nonterminals}'
    E350 = "unknown character class {token!r}; did you mean \"[:{close}:]\"? (every character of the corpus)"
    E351 = "unknown character class {token!r}; the only class is {CORPUS_CLASS} (every character of the corpus)"
    E352 = "malformed character class {token!r}; write {CORPUS_CLASS} as a token of its own"
    E353 = "unclosed character class {token!r}; write {CORPUS_CLASS}"
    E354 = "unclosed character class {token!r}; the only class is {CORPUS_CLASS} (every character of the corpus)"
    E355 = ("unclosed character class {token!r}; the only class is {CORPUS_CLASS} (every character of the corpus), "
            "and a terminal [ must stand alone")
    E360 = 'the grammar has no rules; add rules such as `1 1 Sentence --> Word`'
    E361 = 'unknown symbol: the start symbol {start!r} has no rules; {fix}use one of {listing} or add rules for it'
    E362 = '{CORPUS_CLASS} cannot be a parent; it only stands for the corpus characters on a right-hand side'
    E363 = ("nonterminal {symbol} is not reachable from the start symbol {start}{also}; use it on a right-hand "
            "side or delete its rules")
    E364 = ("nonterminal {symbol} derives no terminal string{also}: every rule of it uses a nonterminal that "
            "never ends; add a non-recursive rule such as `1 1 {symbol} --> x`")
    E365 = ("{parent} --> {CORPUS_CLASS} needs the corpus alphabet; pass the training corpus (or "
            "read_grammar(..., alphabet=...) / expand_corpus_class(grammar, alphabet))")
    E366 = 'empty right-hand side for {parent}; write at least one symbol after --> or delete the rule'
    E367 = ("{CORPUS_CLASS} must be the whole right-hand side (e.g. `1 1 Char --> {CORPUS_CLASS}`); move it to a "
            "rule of its own")
    E368 = 'rule weight {weight!r} of {parent} must be a positive number'
    E369 = 'unknown symbol {symbol!r} is adapted but has no rules; {fix}add its rules or remove its adaptor'
    E370 = 'discount a={a!r} of adapted {symbol} must be in [0, 1) (a = 1 means unadapted)'
    E371 = 'concentration b={b!r} of adapted {symbol} must be > 0'
    E372 = '{never_a_parent}, and nonterminal {hint}{at} is not reachable from the start symbol {start}{suggestion}'
    E373 = ("adapted nonterminal {symbol} is recursive: {cycle}; an adapted nonterminal may not occur below "
            "itself, so recurse through an unadapted helper (e.g. `1 1 Chars --> Char Chars`) or mark {symbol} "
            "unadapted with a = 1")
    E374 = ("unary rules form a cycle: {cycle}{where}; the parser needs unary rules without cycles, so remove one "
            "of these rules")
    E375 = "unary rules form a cycle: {cycle}; break it so that the chart can close unary rules in one pass"

    # ---- generated corpora (spacy_ag.synthetic) (E380-E390)
    E380 = 'bad lexicon size/lengths: n_words={n_words}, min_len={min_len}, max_len={max_len}'
    E381 = 'empty alphabet'
    E382 = 'only {capacity} words of length {min_len}-{max_len} exist over {n_letters} letters'
    E383 = 'empty lexicon'
    E384 = 'mean_words must be at least 1, got {mean_words}'
    E385 = 'bad corpus size: n_chars={n_chars}, block={block}'
    E386 = ("need n_stems, classes, suffixes_per_class >= 1 and forms_per_stem >= 2, got {n_stems}, {classes}, "
            "{suffixes_per_class}, {forms_per_stem}")
    E387 = 'forms_per_stem = {forms_per_stem} needs at least {needed} suffixes per class'
    E388 = ("need n_topics, n_documents, words_per_topic, document_length >= 1 and alpha > 0, got {n_topics}, "
            "{n_documents}, {words_per_topic}, {document_length}, {alpha}")
    E389 = 'could not draw {n_words} distinct words; use a larger alphabet or max_len'
    E390 = 'every collocation needs at least one non-empty word'

    # ---- scoring segmentations (E391-E397)
    E391 = '{n_predicted} predicted utterances but {n_gold} gold utterances'
    E392 = '{pred_name} has {n_pred} utterances but {gold_name} has {n_gold}'
    E393 = '{pn} has {n_pred} {what} but {gn} has {n_gold}'
    E394 = 'empty word in {words!r}: a word must cover at least one character'
    E395 = 'boundary {b} outside 0..{n_text} of {text!r}'
    E396 = 'utterance {n_utterances}: predicted characters {p_text!r} differ from gold {g_text!r}'
    E397 = '{pred_name}:{pl}: characters {predicted!r} differ from {gold_name}:{gl}: {gold!r}'

    # ---- morphology: levels, gold analyses, grammars, word lists (E398-E409)
    E398 = '--level {value!r} names no nonterminal; write e.g. --level Stem,Suffix'
    E399 = '{n_missing} gold word(s) have no prediction, e.g. {missing!r}; segment every word of the gold file'
    E400 = '{name}:{number}: expected `word<TAB>morph morph ...` (Morpho Challenge format), found no tab in {text!r}'
    E401 = ("{name}:{number}: no analysis of {word!r} spells the word; give at least one analysis whose morph "
            "surfaces concatenate to it")
    E402 = '{name}:{number}: {word!r} is listed twice; merge its analyses into one line separated by commas'
    E403 = '{name}:{number}: the morphs {morphs!r} do not spell {word!r}'
    E404 = 'the predicted morphs {morphs!r} do not spell {word!r}'
    W405 = '{name}:{number}: the morphs {morphs!r} do not spell {word!r}; this alternative is not scored'
    E406 = 'unknown morphology grammar {kind!r}; choose one of {kinds}'
    E407 = 'classes must be a whole number >= 1 (or 0/None for none), got {classes!r}'
    E408 = 'need 0 <= a < 1 and b > 0 for adapted nonterminals, got a={a!r} b={b!r}'
    E409 = 'units must be one of {choices}, got {units!r}'

    # ---- topics: coherence, the topic grammar, planted topics, pyLDAvis (E410-E420)
    E410 = 'heldout fraction must be in [0, 1), got {fraction}'
    E411 = 'window must be >= 1, got {window}'
    E412 = "missing must be 'skip' or 'zero', got {missing!r}"
    E413 = 'the number of topics must be at least 1, got {n_topics}'
    E414 = 'the topic grammar needs the corpus characters; the documents have none'
    E415 = 'terminals must be single non-space characters (a code point or a grapheme cluster each), got {bad!r}'
    E416 = '{n_predicted} predicted labels for {n_planted} planted ones'
    E417 = 'no documents to score'
    E418 = 'topic labels must be >= 0'
    E419 = 'no document has a word the topic model can spell; pyLDAvis needs at least one'
    E420 = 'unknown coherence measure {unknown!r}; use {measures}'

    # ---- spaCy components: parser, readers, fitting hook, tokenizer update, topics (E421-E439)
    E421 = ("{name}: no trained grammar. Call nlp.initialize(get_examples) to fit it on the examples' text, set "
            "[initialize.components.{name}] model_path, or give the component a `model` directory")
    W422 = ("{name}: nlp.initialize() was called without examples, so there is nothing to fit the grammar on; the "
            "component stays untrained")
    E423 = '{name}: the training examples contain no text to learn from'
    E424 = 'spacy-ag.SegmentedCorpus.v1: file not found: {path}'
    E425 = '{name}: file not found: {path}'
    E426 = 'observe_fitting takes a FitObserver or a callable, got {type_name}'
    E427 = ("{name}: the pipeline's tokenizer is not the spacy-ag segmenter ([nlp.tokenizer] @tokenizers = "
            '"spacy-ag.Segmenter.v1")')
    E428 = ("{name}: the saved model has {n_topics} topics but the component's n_topics is {cfg}; set n_topics = "
            "{n_topics}")
    E429 = '{name}: the training examples contain no words to learn topics from'
    E430 = '{name}: no topics yet. Call nlp.initialize(get_examples) or load a trained pipeline'

    # ---- settings: the message after ``section.key`` (spacy_ag.settings.SettingError) (E440-E449)
    E440 = "must be a section, got {value!r}"
    E441 = "is not a setting; [{section}] takes {known}"
    E442 = "must be a value, not a subsection"
    E443 = "must be {expected}, got {value!r}"
    E444 = "is missing; it is required"

    # ---- numba's environment: the kernel cache (W450-W459)
    W450 = ("spacy-ag: {where}, so numba compiles the kernels afresh in every process (caching off); set "
            "NUMBA_CACHE_DIR to a writable directory to keep them")
    W451 = ("spacy-ag: {where}, so numba caches compiled kernels in {cache_dir}; set NUMBA_CACHE_DIR to choose a "
            "directory")
    E452 = "{path} is not a directory of this user"

    # ---- the command line: topics, annotation, init-config, morphology (E460-E478)
    E460 = "module 'spacy_ag' has no attribute {name!r}"
    E461 = '--format must be one of {formats}, got {format!r}'
    E462 = '--level analyses the words of plain text; it does not read --format wordseg'
    W463 = ("--workers is for --backend ray; the local backend annotates in this process (--backend ray without "
            "--ray-address uses the cores of this machine)")
    E464 = '{path} is a directory; give the config file to write'
    E465 = '{pred}: {err} (gold: {gold})'
    W466 = '--backend and --workers are for a directory INPUT; {input_path} is annotated in this process'
    W468 = '{model_path} recorded {n_history} ranking(s) of the topics {how}; nothing shown'
    E469 = '--history: topic {topic} does not exist; topics are 0..{last}'
    W470 = ("this pyLDAvis ({version}) has a script spacy-ag does not know, so the page numbers the topics from "
            "1: its topic k is topic k - 1 of `spacy-ag topics`")
    W471 = '{n_standard} top words never occur in the reference documents and were left out: {words}'
    E472 = "--plot needs matplotlib: pip install 'spacy-ag[plot]'"
    W473 = "--docs gives the documents of the --ldavis page: give the page's path with --ldavis FILE; nothing written"
    W474 = '--plot draws the rankings of one topic over the stream: give the topic with --history N; nothing plotted'
    E475 = 'no {option} given and no {given}; pass the {what} with {option} FILE'
    E476 = "{option} needs pyLDAvis: pip install 'spacy-ag[ldavis]'"
    E477 = '--format must be one of {formats}, got {fmt!r}'
    W478 = ("{skipped} tokens of {docs_path} have a character {model_path} has never seen and were skipped (the "
            "alphabet is fixed when a model is first trained)")

    # ---- the segmenter component (E479-E484)
    E479 = 'grammar {grammar!r}: neither a built-in grammar ({builtins}) nor an existing grammar file'
    E480 = 'segmentation {pieces!r} does not spell the text {text!r}'
    W482 = ("spacy-ag segmenter is not fitted yet: one token per character. Call nlp.initialize(get_examples) "
            "with raw text, or load a trained pipeline.")
    W483 = ("spacy-ag segmenter: nlp.initialize() was called without examples, so the segmenter stays unfitted "
            "(one token per character)")
    E484 = ("spacy-ag segmenter: the training examples contain no text to learn from (only whitespace and "
            "boundary characters)")

    # ---- corpora and input formats (E485-E495)
    E485 = 'unknown encoding {encoding!r}; use one of {encodings}'
    E486 = 'unknown corpus mode {mode!r}; use one of {modes}'
    E487 = "gold=True needs mode='chars' (gold words are spelled by characters)"
    E488 = '{n_sentences} sentences but {n_lines} line numbers'
    E489 = 'got {n_segmentations} segmentations for {n_sentences} sentences'
    E490 = 'file not found: {name}'
    E491 = 'pieces and utterance_lines must have the same length'
    E492 = '{source}:{lines}: segmentation {segmentation!r} does not spell the sentence {want!r}'
    E493 = 'not a wordseg format: {fmt!r}'
    E494 = 'unknown format {fmt!r}; use one of {formats}'
    E495 = 'unknown gold format {fmt!r}; use one of {formats}'

    # ---- training runs: checkpoints, gold words, pipelines, workers (E496-E515)
    E496 = '{source}: incomplete variational statistics; retrain the model'
    E497 = '{path}: an MCMC checkpoint; resume it with inference mode mcmc'
    E498 = '{path}: checkpoint of another corpus or grammar; remove it or train without --resume'
    E499 = ("{gold_name} has {n_gold_utterances} lines but {path} has {n_pieces_per_line}; the gold file needs "
            "one line per training line")
    W500 = ("training.eval_every/eval_at is set but there are no gold words (paths.gold or corpus.gold); token F "
            "is not traced")
    E501 = '{gold_name}:{line}: the gold words spell {spelled!r} but line {line} of {path} is {text!r}'
    E502 = '--grammar {grammar!r} is neither a built-in grammar ({builtins}) nor a grammar file'
    E503 = '--iterations and --chains must be at least 1'
    E504 = '--lang {lang!r} is not a language spaCy knows (e.g. zh, xx, en)'
    W505 = '{path}: cannot lock ({reason}); nothing stops another run from writing to the same output'
    E506 = ("{config_path}: [{train_name}] path is not set; give the raw training text with --paths.train FILE "
            "(plain text, one text per line, or JSONL, one {{\"text\": ...}} per line)")
    E507 = ("{config_path}: training.max_epochs = -1 (streamed corpus) would fit the grammars on only the first "
            "100 texts; use max_epochs = 1 (or 0)")
    E508 = 'gold file not found: {gold_path}'
    E509 = '{gold}: no gold examples'
    W510 = 'no adaptor grammar was fitted (the components were already fitted or loaded a model_path)'
    E512 = 'a training worker failed with {kind}: {err}'
    E513 = 'the worker process of chain {chain_index} ended without a result ({how})'
    E514 = 'rule {parent} --> {CORPUS_CLASS} is not expanded; give a corpus so its characters are known'
    E515 = ("--level {unknown}: not a nonterminal of the model's grammar (nor one with a class index such as "
            "{example}_1); choose from {nonterminals}")

    # ---- model and settings files, and the Python API of the models (E520-E554)
    W520 = '{source}: a spacy-ag model of format 1, converted on load; save it again to write format {version}'
    E522 = 'the header is not a JSON object'
    E524 = 'npy format {version}'
    E525 = 'member shorter than its size'
    E526 = '{what} not found: {path}'
    E527 = '{what} {path} is a directory, expected a file'
    E528 = '{option} must be one of {choices}, got {value!r}'
    E534 = 'max_span must be a number of terminals, at least 1, got {max_span}'
    E535 = 'unknown inference mode {inference!r}; use one of {modes}'
    E536 = 'corpus file not found: {corpus}'
    E537 = '{source}: no text to train on'
    E538 = 'the model has not been fitted in this session'
    E540 = 'the model has no trained state: call fit() or load() first'
    E541 = '{category!r} is not adapted; adapted: {adapted}'
    E543 = ("{source}:{lines}: this sentence has no parse under the grammar; check the grammar with `spacy-ag "
            "check-grammar`")
    E550 = 'inference must be one of {modes}, got {inference!r}'
    E551 = ("the Gibbs sampler of the topics needs a = 0 (Dirichlet-process topics), got a = {a}; use "
            "inference='online' for Pitman-Yor topics")
    E552 = 'the topic model is not trained: call fit() or partial_fit() first, or load()'
    E553 = 'Gibbs sampling starts from an untrained model; continue a trained one with partial_fit'
    E554 = "digamma needs a positive argument"

    # ---- checkpoints as archives: one on-disk format for models and checkpoints (E560-E569)
    E560 = ("--resume: {path} is a checkpoint written by an older spacy-ag (format 1), which this version does not "
            "read; train without --resume (resume=False in Python) to start the run again")


def split_code(message: str) -> tuple[str, str]:
    """(``"[E308] "`` or ``""``, the text after it) of a message from the table or written without one."""
    if message.startswith("[") and "] " in message:
        code, text = message.split("] ", 1)
        return code + "] ", text
    return "", message


def with_place(place: str, message: str) -> str:
    """`message` with `place` (a file and line, a setting's name) after its code: ``[E308] g.lt:2: ...``,
    so that the code still opens the line."""
    code, text = split_code(message)
    return code + place + text


def coded(code: str, message: str) -> str:
    """`message` with `code` in front, unless it already has a code (an OSError's "[Errno 28] ..." is
    not one)."""
    has_code = message[:1] == "[" and message[1:2] in ("E", "W") and message[2:5].isdigit() and message[5:6] == "]"
    return message if has_code else f"[{code}] {message}"


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


class OutputWriteError(SpacyAgError):
    """An output file that cannot be written because the disk, the quota or the file size limit is full."""

    code = "E202"


class AnnotationError(SpacyAgError):
    """A directory of text that cannot be annotated as asked."""

    code = "E130"
