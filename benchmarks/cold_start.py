"""Cold-start cost of the main spacy-ag commands: wall time on an empty kernel cache, then warm (not a test).

    python benchmarks/cold_start.py --json out/cold_start.json
    python benchmarks/cold_start.py --only unigram,segment --json /tmp/cold_start.json

Why: a new user's first command compiles spacy-ag's numba kernels (`cache=True`)
before it does any work, and that wait takes minutes. This measures it for
every main command: the same command is timed twice as a
subprocess, first with NUMBA_CACHE_DIR set to a new empty directory (cold: every
kernel it meets is compiled), then again with the same directory (warm: every
kernel is loaded from the cache). Cold minus warm is the compilation a user
waits for. The stderr and stdout of each run are read line by line with the time
each line arrives, so that the JSON also says how many stderr lines mention
compiling, how long after the start the first of them came (how soon the user is
told why they wait) and when the first line of any output came.

What: every command runs from the repository root, as `python -m spacy_ag ...` or
`python -c CODE` with this interpreter and the inherited environment (PYTHONPATH
too; PYTHONSAFEPATH keeps the repository root itself off sys.path), so it measures
whichever spacy_ag is importable. All data is generated into a temporary
directory: phoneme-like utterances (syllables of the Brent grammars' consonants
and vowels) for the Brent grammars, `segment` and `parse`; a made-up lexicon of
CJK words for the Chinese configs; a made-up stem+suffix word list for
morphology; documents of a few planted topics for the topic model. Each command
gets `--iterations` sweeps (or its equivalent), so a warm run takes seconds and
the difference is the compilation. The corpora are large enough that the online
passes reach a refinement (every 50 minibatches of the warm start, every 20 of
the topics), so those kernels are on the clock as they are in a real run. A
command that needs a trained model (segment, parse, nlp.pipe, update-topics)
first gets an untimed setup run that trains it, with a cache directory of its
own shared by every setup, so only the measured command meets the empty cache.
Each run's output directory is deleted before it, so the cold and warm argv are
identical.

The JSON is written after every command: the machine (CPUs, load, versions), the
date, and per command its argv, the setup's argv and time, and for each run
the seconds, exit code, stderr line counts and the first compiling line. The
chains of `chinese-colloc` (2 in its config) run as it says, in parallel
processes that compile their kernels at once, as a user's run would.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from spacy_ag.synthetic import (
    generate_corpus, generate_morphology, generate_topic_corpus, make_lexicon, write_gold, write_raw,
)

ROOT = Path(__file__).resolve().parent.parent
#: The environment of every command: this one, the kernel cache aside. PYTHONSAFEPATH keeps the working
#: directory (the repository root) off sys.path, so that PYTHONPATH or the installation decides which
#: spacy_ag is measured, not the checkout the commands run in; PYTHONUNBUFFERED makes stdout arrive
#: line by line, as on a terminal, so that its lines are timed when a user would see them.
BASE_ENV = dict(os.environ, PYTHONSAFEPATH="1", PYTHONUNBUFFERED="1")

#: A stderr line that tells the user kernels are being compiled.
COMPILING = re.compile(r"compil", re.IGNORECASE)

# consonants and vowels of the Brent grammars' Consonant and Vowel rules (configs/grammars/brent-*.lt),
# so that every generated word parses as syllables under the syllable grammars
CONSONANTS = "bdgklmnpstvzDSTN"
VOWELS = "aeiouAEIU6"
#: common CJK characters that the made-up Chinese words are spelled with
CJK_CHARS = ("的一是不了人我在有他这中大来上国个到说们为子和你地"
             "出道也时年得就那要下以生会自着去之过家学对可里后小么")
CJK_STOP = "。"

#: The topic model's generated corpus: the 1,080 training documents of 1,200 (10% are held out) make 22
#: minibatches of 50, so one online pass reaches a refinement (refine_every = 20 in the topic defaults).
TOPIC_DOCUMENTS = 1200
PHONEME_UTTERANCES = 1100  # 55 minibatches of the unigram warm start (batch_size 20): a refinement at 50


# ---------------------------------------------------------------- generated data


def phoneme_lexicon(n_words: int, seed: int) -> List[str]:
    """Words of one to three syllables, each a consonant, a vowel and sometimes a final consonant.

    The syllable inventory is a `make_lexicon` over the consonants (onsets, codas);
    a word's syllables are drawn with numpy's generator, deterministic given `seed`.
    """
    onsets = make_lexicon(len(CONSONANTS), alphabet=CONSONANTS, min_len=1, max_len=1, seed=seed)
    rng = np.random.default_rng(seed)
    words: List[str] = []
    seen = set()
    while len(words) < n_words:
        syllables = []
        for _ in range(int(rng.integers(1, 4))):
            coda = onsets[int(rng.integers(len(onsets)))] if rng.random() < 0.3 else ""
            syllables.append(onsets[int(rng.integers(len(onsets)))] + VOWELS[int(rng.integers(len(VOWELS)))] + coda)
        word = "".join(syllables)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


@dataclass
class Data:
    """Paths of the generated inputs."""

    phon_gold: Path
    phon_raw: Path
    zh_gold: Path
    zh_raw: Path
    morph_words: Path
    topic_docs: Path
    topic_new_docs: Path
    n_topics: int


def generate_data(folder: Path) -> Data:
    folder.mkdir(parents=True, exist_ok=True)
    phon = generate_corpus(phoneme_lexicon(120, seed=3), PHONEME_UTTERANCES, mean_words=3.0, seed=4,
                           collocations=15)
    write_gold(folder / "phon-gold.txt", phon)
    write_raw(folder / "phon-raw.txt", phon)
    zh_lexicon = make_lexicon(300, alphabet=CJK_CHARS, min_len=1, max_len=3, seed=5)
    zh = [words + [CJK_STOP] for words in generate_corpus(zh_lexicon, 600, mean_words=6.0, seed=6)]
    write_gold(folder / "zh-gold.txt", zh)
    write_raw(folder / "zh-raw.txt", zh)
    morphology = generate_morphology(150, seed=7)
    (folder / "morph-words.txt").write_text("".join(w + "\n" for w in morphology.words), encoding="utf-8")
    n_topics = 4
    topics = generate_topic_corpus(n_topics, TOPIC_DOCUMENTS, words_per_topic=40, document_length=20, seed=8)
    write_gold(folder / "topic-docs.txt", topics.documents)
    new_topics = generate_topic_corpus(n_topics, 200, words_per_topic=40, document_length=20, seed=9)
    write_gold(folder / "topic-new-docs.txt", new_topics.documents)
    return Data(folder / "phon-gold.txt", folder / "phon-raw.txt", folder / "zh-gold.txt", folder / "zh-raw.txt",
                folder / "morph-words.txt", folder / "topic-docs.txt", folder / "topic-new-docs.txt", n_topics)


# ---------------------------------------------------------------- commands

PARTIAL_FIT_CODE = """\
import sys
from spacy_ag import TopicModel
docs = [line.split() for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
model = TopicModel(n_topics=int(sys.argv[2])).partial_fit(docs, seed=0)
print([[word for word, _ in model.top_words(k, 5)] for k in range(model.n_topics)])
"""

NLP_PIPE_CODE = """\
import sys
import spacy
nlp = spacy.load(sys.argv[1])
texts = [line.rstrip("\\n") for line in open(sys.argv[2], encoding="utf-8") if line.strip()]
print(sum(len(doc) for doc in nlp.pipe(texts)), "tokens in", len(texts), "texts")
"""


@dataclass
class Command:
    """One measured command: its argv, the directory it writes (deleted before each run), its setup."""

    name: str
    what: str
    argv: List[str]
    output: Optional[Path] = None
    setup: Optional[str] = None


@dataclass
class Setup:
    """An untimed run that trains the model a command needs."""

    argv: List[str]
    output: Path
    result: Optional[Dict] = field(default=None)


def spacy_ag(*args) -> List[str]:
    return [sys.executable, "-m", "spacy_ag", *[str(a) for a in args]]


def python_code(code: str, *args) -> List[str]:
    return [sys.executable, "-c", code, *[str(a) for a in args]]


def build_commands(data: Data, work: Path, iterations: int):
    """The measured commands in the order they run, and the setups they name."""
    setup_dir, runs = work / "setup", work / "runs"
    setups = {
        "unigram-model": Setup(spacy_ag("train", "configs/brent-unigram.cfg", "--paths.train", data.phon_gold,
                                        "--output", setup_dir / "unigram", "--training.iterations", iterations),
                               setup_dir / "unigram"),
        "pipeline-zh": Setup(spacy_ag("train", "configs/pipeline-zh-unigram.cfg", "--paths.train", data.zh_raw,
                                      "--paths.dev", data.zh_gold, "--output", setup_dir / "pipeline-zh",
                                      "--nlp.tokenizer.iterations", iterations),
                             setup_dir / "pipeline-zh"),
        "topics-gibbs": Setup(spacy_ag("train", "configs/topics/de-news.cfg", "--paths.train", data.topic_docs,
                                       "--output", setup_dir / "topics-gibbs", "--topics.n_topics", data.n_topics,
                                       "--topics.sweeps", iterations),
                              setup_dir / "topics-gibbs"),
    }

    def out(name: str) -> Path:
        return runs / name / "out"

    def engine(name: str, config: str, train: Path, what: str) -> Command:
        return Command(name, what, spacy_ag("train", config, "--paths.train", train, "--output", out(name),
                                            "--training.iterations", iterations), out(name))

    commands = [
        Command("demo", "spacy-ag demo (generated corpus, unigram grammar, batch init)",
                spacy_ag("demo", "--output", out("demo"), "--iterations", max(2, iterations)), out("demo")),
        engine("unigram", "configs/brent-unigram.cfg", data.phon_gold, "unigram grammar, online warm start"),
        engine("colloc", "configs/brent-colloc.cfg", data.phon_gold, "collocation grammar, online warm start"),
        engine("collocsyll", "configs/brent-collocsyll.cfg", data.phon_gold,
               "collocation-syllable grammar, incremental init"),
        engine("funcwords", "configs/brent-funcwords.cfg", data.phon_gold, "function-word grammar, batch init"),
        engine("chinese-colloc", "configs/chinese-colloc.cfg", data.zh_gold,
               "three-level Chinese collocation grammar, 2 chains"),
        engine("morphology", "configs/morphology/prefix-stem-suffix-submorphs.cfg", data.morph_words,
               "morphology of a word list (PrStSu+SM)"),
        Command("topics-gibbs", "topic config, collapsed Gibbs sweeps",
                spacy_ag("train", "configs/topics/de-news.cfg", "--paths.train", data.topic_docs,
                         "--output", out("topics-gibbs"), "--topics.n_topics", data.n_topics,
                         "--topics.sweeps", iterations), out("topics-gibbs")),
        Command("topics-online", "topic config, one online pass (22 minibatches: a refinement)",
                spacy_ag("train", "configs/topics/de-news.cfg", "--paths.train", data.topic_docs,
                         "--output", out("topics-online"), "--topics.n_topics", data.n_topics,
                         "--topics.inference", "online", "--topics.passes", 1), out("topics-online")),
        Command("pipeline-zh", "spaCy pipeline config (zh, unigram segmenter) with dev scoring",
                spacy_ag("train", "configs/pipeline-zh-unigram.cfg", "--paths.train", data.zh_raw,
                         "--paths.dev", data.zh_gold, "--output", out("pipeline-zh"),
                         "--nlp.tokenizer.iterations", iterations), out("pipeline-zh")),
        Command("partial-fit", "TopicModel.partial_fit in Python, one online pass over new documents",
                python_code(PARTIAL_FIT_CODE, data.topic_docs, data.n_topics)),
        Command("update-topics", "spacy-ag update-topics on a Gibbs-trained model (setup)",
                spacy_ag("update-topics", setup_dir / "topics-gibbs" / "model", data.topic_new_docs,
                         "--output", out("update-topics") / "model"),
                out("update-topics"), setup="topics-gibbs"),
        Command("segment", "spacy-ag segment with the unigram model (setup)",
                spacy_ag("segment", setup_dir / "unigram" / "model", data.phon_raw), setup="unigram-model"),
        Command("parse", "spacy-ag parse with the unigram model (setup)",
                spacy_ag("parse", setup_dir / "unigram" / "model", data.phon_raw), setup="unigram-model"),
        Command("nlp-pipe", "spacy.load + nlp.pipe of a trained zh pipeline (setup)",
                python_code(NLP_PIPE_CODE, setup_dir / "pipeline-zh" / "model-last", data.zh_raw),
                setup="pipeline-zh"),
    ]
    return commands, setups


COMMAND_NAMES = ("demo", "unigram", "colloc", "collocsyll", "funcwords", "chinese-colloc", "morphology",
                 "topics-gibbs", "topics-online", "pipeline-zh", "partial-fit", "update-topics", "segment",
                 "parse", "nlp-pipe")


# ---------------------------------------------------------------- timing


def _read_lines(stream, started: float, lines: List) -> None:
    """Collect (seconds since `started`, text) for every line of `stream` as it arrives; a carriage
    return ends a line too (progress bars redraw with it)."""
    fd = stream.fileno()
    pending = b""
    while True:
        chunk = os.read(fd, 65536)
        now = time.perf_counter() - started
        if not chunk:
            break
        pending += chunk
        parts = re.split(rb"[\r\n]", pending)
        pending = parts.pop()
        lines.extend((now, part.decode("utf-8", "replace")) for part in parts if part.strip())
    if pending.strip():
        lines.append((time.perf_counter() - started, pending.decode("utf-8", "replace")))


def run_timed(argv: List[str], cache: Path, log: Path, timeout: float) -> Dict:
    """Run `argv` from the repository root with NUMBA_CACHE_DIR=`cache`: wall seconds, exit code, and the
    lines of stderr and stdout with their arrival times (kept in `log`.stderr and `log`.stdout).

    Lines mentioning compiling are counted on stderr, where progress goes; the first such line
    of either stream is recorded with its stream, so a notice printed on stdout is not missed.
    """
    env = dict(BASE_ENV, NUMBA_CACHE_DIR=str(cache))
    log.parent.mkdir(parents=True, exist_ok=True)
    streams: Dict[str, List] = {"stderr": [], "stdout": []}
    timed_out = False
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    readers = [threading.Thread(target=_read_lines, args=(getattr(proc, name), started, lines), daemon=True)
               for name, lines in streams.items()]
    for reader in readers:
        reader.start()
    try:
        code: Optional[int] = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)  # the command's own process group (its chain workers too)
        proc.wait()
        code = None
    seconds = time.perf_counter() - started
    for reader in readers:
        reader.join(timeout=30)  # a leftover grandchild holding a pipe open must not hang the benchmark
    proc.stdout.close()
    proc.stderr.close()
    for name, lines in streams.items():
        log.with_suffix(f".{name}").write_text("".join(f"[{t:8.2f}s] {text}\n" for t, text in lines),
                                               encoding="utf-8")
    stderr = streams["stderr"]
    compiling = sorted((t, name, text) for name, lines in streams.items() for t, text in lines
                       if COMPILING.search(text))
    first_output = min((lines[0][0] for lines in streams.values() if lines), default=None)
    result = {
        "seconds": round(seconds, 3),
        "exit_code": code,
        "timed_out": timed_out,
        "stderr_lines": len(stderr),
        "stdout_lines": len(streams["stdout"]),
        "first_stderr_line_seconds": round(stderr[0][0], 3) if stderr else None,
        "first_output_line_seconds": None if first_output is None else round(first_output, 3),
        "compiling_lines": sum(1 for t, text in stderr if COMPILING.search(text)),
        "compiling_lines_stdout": sum(1 for t, name, text in compiling if name == "stdout"),
        "first_compiling_line_seconds": round(compiling[0][0], 3) if compiling else None,
        "first_compiling_line": compiling[0][2].strip() if compiling else None,
        "first_compiling_line_stream": compiling[0][1] if compiling else None,
    }
    if code != 0:
        result["stderr_tail"] = [text for _, text in stderr[-15:]]
    return result


def machine_info() -> Dict:
    """CPUs, load and the versions of what the commands import (asked of a subprocess with the same
    environment, so they are those of the spacy_ag being measured)."""
    probe = ("import json, numba, numpy, spacy, spacy_ag; print(json.dumps({'numba': numba.__version__, "
             "'numpy': numpy.__version__, 'spacy': spacy.__version__, 'spacy_ag': spacy_ag.__version__, "
             "'spacy_ag_path': spacy_ag.__file__}))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=BASE_ENV, capture_output=True, text=True)
    versions = json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr.strip()[-500:]}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True)
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "git_commit": commit.stdout.strip() or None,
        "git_dirty": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None,
        **versions,
    }


def load_average() -> Optional[List[float]]:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def _clear(path: Optional[Path]) -> None:
    if path is not None and path.exists():
        shutil.rmtree(path)


def run_setup(setup: Setup, cache: Path, logs: Path, timeout: float) -> Dict:
    if setup.result is None:
        _clear(setup.output)
        setup.result = {"argv": setup.argv, **run_timed(setup.argv, cache, logs / setup.output.name, timeout)}
    return setup.result


def measure(command: Command, setups: Dict[str, Setup], work: Path, shared_cache: Optional[Path],
            timeout: float) -> Dict:
    """Setup (untimed, shared setup cache), then the command cold and warm on a new cache directory; with
    `shared_cache`, one run on that directory (a check that the argv are right, not a measurement)."""
    record: Dict = {"name": command.name, "what": command.what, "argv": command.argv, "cwd": str(ROOT)}
    logs = work / "logs"
    if command.setup is not None:
        setup = run_setup(setups[command.setup], shared_cache or work / "caches" / "setup", logs / "setup", timeout)
        record["setup"] = setup
        if setup["exit_code"] != 0:
            record["error"] = f"setup {command.setup} failed"
            return record
    if shared_cache is not None:
        _clear(command.output)
        record["warm"] = run_timed(command.argv, shared_cache, logs / command.name / "shared", timeout)
        record["warm_seconds"] = record["warm"]["seconds"]
        record["exit_codes"] = {"warm": record["warm"]["exit_code"]}
        return record
    cache = work / "caches" / command.name
    cache.mkdir(parents=True)
    for run in ("cold", "warm"):
        _clear(command.output)
        record[run] = run_timed(command.argv, cache, logs / command.name / run, timeout)
    record["cold_seconds"] = record["cold"]["seconds"]
    record["warm_seconds"] = record["warm"]["seconds"]
    record["difference_seconds"] = round(record["cold_seconds"] - record["warm_seconds"], 3)
    record["exit_codes"] = {"cold": record["cold"]["exit_code"], "warm": record["warm"]["exit_code"]}
    record["cache_files"] = sum(1 for p in cache.rglob("*") if p.suffix in (".nbi", ".nbc"))
    return record


def _seconds(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def print_table(records: List[Dict]) -> None:
    """Seconds per command; the first output and compiling lines are those of the cold run."""
    header = (f"{'command':<15} {'cold s':>8} {'warm s':>8} {'cold-warm':>10} {'1st line s':>11} "
              f"{'1st compiling s':>16}  exit")
    print(header)
    print("-" * len(header))
    for r in records:
        first = r.get("cold") or r.get("warm") or {}
        codes = r.get("exit_codes") or {}
        exits = r.get("error") or ",".join(f"{k}={v}" for k, v in codes.items())
        print(f"{r['name']:<15} {_seconds(r.get('cold_seconds')):>8} {_seconds(r.get('warm_seconds')):>8} "
              f"{_seconds(r.get('difference_seconds')):>10} {_seconds(first.get('first_output_line_seconds')):>11} "
              f"{_seconds(first.get('first_compiling_line_seconds')):>16}  {exits}")


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", required=True, type=Path, help="write the results here")
    p.add_argument("--only", help=f"comma-separated subset of: {','.join(COMMAND_NAMES)}")
    p.add_argument("--iterations", type=int, default=10,
                   help="sweeps of every training command (default 10); the online topic runs make one pass")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per run before it is killed (default 3600)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (data, outputs, caches, logs)")
    # a check of the commands' argv: every run on one cache directory, each command run once
    p.add_argument("--shared-cache", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.iterations < 2:
        p.error("--iterations must be at least 2")
    names = list(COMMAND_NAMES)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in COMMAND_NAMES]
        if unknown:
            p.error(f"unknown command(s) {', '.join(unknown)}; choose from {', '.join(COMMAND_NAMES)}")

    work = Path(tempfile.mkdtemp(prefix="spacy-ag-cold-start-"))
    shared = args.shared_cache.resolve() if args.shared_cache else None
    if shared is not None:
        shared.mkdir(parents=True, exist_ok=True)
    result: Dict = {
        "benchmark": "cold_start",
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "mode": "shared-cache check (one run per command, not a measurement)" if shared else "cold and warm",
        "iterations": args.iterations,
        "machine": machine_info(),
        "load_average_start": load_average(),
        "commands": [],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = generate_data(work / "data")
        commands, setups = build_commands(data, work, args.iterations)
        for command in commands:
            if command.name not in names:
                continue
            print(f"... {command.name}: {command.what}", flush=True)
            record = measure(command, setups, work, shared, args.timeout)
            result["commands"].append(record)
            result["load_average_end"] = load_average()
            args.json.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
            print(f"    cold {_seconds(record.get('cold_seconds'))} s, warm {_seconds(record.get('warm_seconds'))} s, "
                  f"exit {record.get('exit_codes') or record.get('error')}", flush=True)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print_table(result["commands"])
    print(f"written to {args.json}")
    failed = [r["name"] for r in result["commands"]
              if r.get("error") or any(code != 0 for code in (r.get("exit_codes") or {}).values())]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
