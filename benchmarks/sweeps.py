"""Seconds per MCMC sweep on Brent, spacy-ag beside py-cfg, in one run (not a test).

    python benchmarks/sweeps.py --data ../shared/data/brent/br-phono.txt --sweeps 10 --json out/sweeps.json
    python benchmarks/sweeps.py --grammars unigram --sweeps 2 --pycfg /work/pycfg/py-cfg
    python benchmarks/sweeps.py --before /tmp/old-checkout --json out/sweeps.json   # also an older checkout

Why: the speed targets in compare_pycfg.py are ratios to py-cfg timings taken
once, by hand. This times both engines in the same run on the same machine,
one grammar after the other (unigram, colloc, collocsyll), so the ratio does
not depend on which machine, or how loaded, the reference was measured on.

How, for each grammar:
* ours: the engine config with py-cfg's settings, configs/brent-<grammar>-jg09.cfg (`build_model`), one
  chain in this process on every line of --data. A warm-up fit of 3 sweeps on
  50 lines first compiles (or loads) every kernel, in a numba cache outside
  the repository. Seconds per sweep: the chain's own per-sweep wall time
  (sweep, table labels, hyperparameters), median over sweeps;
  initialisation is not in it.
* py-cfg: Johnson & Goldwater's flags (PYCFG_FLAGS, with -r SEED -n SWEEPS) on
  the reference grammar, with its trace sent to our pipe (-F /dev/stdout). It
  writes one trace line before each sweep and one after the last, each with its
  user CPU time; we time each line as it comes in. Wall (and CPU) seconds per
  sweep are differences between consecutive lines, median over sweeps; start-up,
  reading and initialisation all come before the first line.
* --before DIR: an older checkout of spacy-ag, timed the same way in a child
  process (its spacy_ag and configs), just before ours, for a before/after
  figure from the same run.
* ratio: ours / py-cfg, by median wall seconds. `cpu_fraction` (CPU / wall over
  the sweeps) well below 1 means the machine was busy and the wall times are
  too high.

Caveats: the first sweeps after the random batch initialisation are slower
than later ones (more tables), so compare runs of equal --sweeps, or the tail
of `per_sweep`. Both engines start sampling hyperparameters at the third
sweep, so with --sweeps 2 neither does. py-cfg shuffles the sentences with an unseeded
rand(), so -r SEED changes its other random draws but never its order, and
-r 0 means "seed from the clock" (hence --seed must be at least 1).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
# name: (our engine config with py-cfg's settings, py-cfg reference grammar); a checkout from before
# the -jg09 configs has the same settings in brent-<name>.cfg
GRAMMARS = {
    "unigram": ("brent-unigram-jg09.cfg", "unigram.lt"),
    "colloc": ("brent-colloc-jg09.cfg", "colloc.lt"),
    "collocsyll": ("brent-collocsyll-jg09.cfg", "collocsyll.lt"),
}
# as in compare_pycfg.py: batch init, collapsed theta, label resampling, a ~ Beta(1, 1), b ~ Gamma(0.1, 10)
PYCFG_FLAGS = "-D -E -w 1 -R -1 -e 1 -f 1 -g 10 -h 0.1 -a 0.0001 -b 10000".split()


def time_ours(name: str, data: str, lines: list, sweeps: int, seed: int, code: Path) -> dict:
    from spacy_ag.config import build_model, load_training_config
    from spacy_ag.corpus import read_corpus

    path = code / "configs" / GRAMMARS[name][0]
    if not path.exists():
        path = path.with_name(path.name.replace("-jg09", ""))
    cfg = load_training_config(path)
    started = time.perf_counter()
    build_model(cfg).fit([l.replace(" ", "") for l in lines[:50]], iterations=3, seed=seed)
    warm_up = time.perf_counter() - started
    corpus = read_corpus(data, gold=True)
    marks = []  # (wall clock, process CPU, the sweep's own seconds) at each trace line
    started = time.perf_counter()
    # burn_in = sweeps - 1: only the last sweep keeps a sample
    build_model(cfg).fit(corpus, iterations=sweeps, chains=1, seed=seed, burn_in=sweeps - 1,
                         callback=lambda l: marks.append((time.perf_counter(), time.process_time(), l["seconds"])))
    per_sweep = [m[2] for m in marks]
    return {
        "seconds_per_sweep": statistics.median(per_sweep),
        "per_sweep": per_sweep,
        "setup_seconds": marks[0][0] - started - marks[0][2],  # reading, compiling the grammar, initialisation
        "warm_up_seconds": warm_up,
        "cpu_fraction": (marks[-1][1] - marks[0][1]) / (marks[-1][0] - marks[0][0]),
        "config": str(cfg.config_path),
    }


def time_checkout(code: str, name: str, args) -> dict:
    """`time_ours` for another checkout, in a child process that imports its spacy_ag."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "before.json"
        subprocess.run([sys.executable, __file__, "--code", code, "--grammars", name, "--pycfg", "/nonexistent",
                        "--sweeps", str(args.sweeps), "--seed", str(args.seed), "--data", args.data,
                        "--json", str(out)], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "NUMBA_CACHE_DIR": os.environ["NUMBA_CACHE_DIR"] + "-before"})
        return json.loads(out.read_text())["grammars"][name]["ours"]


def time_pycfg(binary: str, grammar: Path, text: str, sweeps: int, seed: int) -> dict:
    cmd = [binary, *PYCFG_FLAGS, "-r", str(seed), "-n", str(sweeps), "-F", "/dev/stdout", str(grammar)]
    rows = []  # (wall clock, py-cfg's user CPU seconds) at each trace line
    with open(text, "rb") as stdin, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=err)
        for raw in iter(proc.stdout.readline, b""):
            if raw.strip() and not raw.startswith(b"#"):  # It, Temp, Time, -logP, ...
                rows.append((time.perf_counter(), float(raw.split(b"\t")[2])))
        if proc.wait() != 0 or len(rows) != sweeps + 1:
            err.seek(0)
            raise RuntimeError(f"py-cfg failed (exit {proc.returncode}, {len(rows)} trace lines): "
                               f"{shlex.join(cmd)}\n{err.read().decode(errors='replace')[-2000:]}")
    wall = [b[0] - a[0] for a, b in zip(rows, rows[1:])]
    cpu = [b[1] - a[1] for a, b in zip(rows, rows[1:])]
    return {
        "seconds_per_sweep": statistics.median(wall),
        "per_sweep": wall,
        "cpu_seconds_per_sweep": statistics.median(cpu),
        "setup_seconds": rows[0][0] - started,  # start-up, reading, initialisation
        "cpu_fraction": sum(cpu) / sum(wall),
        "command": shlex.join(cmd) + " < corpus",
    }


def machine() -> dict:
    import numba
    import numpy

    cpu = platform.processor()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu_count": os.cpu_count(), "cpu": cpu, "platform": platform.platform(),
            "python": platform.python_version(), "numba": numba.__version__, "numpy": numpy.__version__,
            "load_average": os.getloadavg()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(SHARED / "data/brent/br-phono.txt"),
                   help="gold-segmented Brent file (br-phono.txt)")
    p.add_argument("--grammars", default=",".join(GRAMMARS), help="comma-separated, of: " + ", ".join(GRAMMARS))
    p.add_argument("--sweeps", type=int, default=10, help="timed sweeps per engine and grammar (at least 2)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--pycfg", default="/work/pycfg/py-cfg", help="py-cfg binary (missing: ours only)")
    p.add_argument("--pycfg-grammars", default=str(SHARED / "design/reference-grammars"),
                   help="folder of the py-cfg reference grammars")
    p.add_argument("--before", help="an older spacy-ag checkout to time as well")
    p.add_argument("--code", default=str(ROOT), help=argparse.SUPPRESS)  # the checkout timed as ours
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    names = [g.strip() for g in args.grammars.split(",") if g.strip()]
    if not names or any(g not in GRAMMARS for g in names):
        p.error(f"--grammars takes a comma-separated list of {', '.join(GRAMMARS)}")
    if args.sweeps < 2 or args.seed < 1:
        p.error("--sweeps must be at least 2 and --seed at least 1 (py-cfg reads -r 0 as 'seed from the clock')")
    # before numba is imported: a cache that lasts between runs, outside the repository
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(tempfile.gettempdir()) / "spacy-ag-sweeps-numba"))
    code = Path(args.code).resolve()
    sys.path.insert(0, str(code))
    info = machine()  # the load average before this run

    have_pycfg = os.access(args.pycfg, os.X_OK)
    version = None
    if have_pycfg:
        found = re.search(rb"py-cfg version of [^\\\n\0]*", Path(args.pycfg).read_bytes())
        version = found and found.group().decode()
    else:
        print(f"note: no py-cfg binary at {args.pycfg}; timing ours only (give --pycfg PATH)")

    with open(args.data, encoding="utf8") as f:
        lines = [l.strip() for l in f if l.strip()]
    results = {}
    with tempfile.NamedTemporaryFile("w", suffix=".yld", encoding="utf8") as text:
        # py-cfg's input: the phonemes of each utterance, space-separated, word boundaries removed
        text.write("".join(" ".join(l.replace(" ", "")) + "\n" for l in lines))
        text.flush()
        for name in names:
            before = time_checkout(args.before, name, args) if args.before else None
            ours = time_ours(name, args.data, lines, args.sweeps, args.seed, code)
            theirs = (time_pycfg(args.pycfg, Path(args.pycfg_grammars) / GRAMMARS[name][1], text.name,
                                 args.sweeps, args.seed) if have_pycfg else None)
            ratio = theirs and ours["seconds_per_sweep"] / theirs["seconds_per_sweep"]
            results[name] = {"ours": ours, "py_cfg": theirs, "ratio_ours_to_py_cfg": ratio}
            if before:
                results[name].update(before=before, ratio_before_to_py_cfg=theirs and (
                    before["seconds_per_sweep"] / theirs["seconds_per_sweep"]))
            print(f"{name:<11} " + (f"before {before['seconds_per_sweep']:.3f}   " if before else "")
                  + f"ours {ours['seconds_per_sweep']:.3f} s/sweep"
                  + (f"   py-cfg {theirs['seconds_per_sweep']:.3f} s/sweep   ours/py-cfg {ratio:.2f}"
                     f"   (cpu fraction ours {ours['cpu_fraction']:.2f}, py-cfg {theirs['cpu_fraction']:.2f})"
                     if theirs else "   py-cfg not run"), flush=True)

    out = {
        "command": shlex.join([sys.executable, *sys.argv]),
        "data": args.data, "sentences": len(lines), "sweeps": args.sweeps, "seed": args.seed,
        "code": str(code), "before": args.before,
        "machine": info,
        "py_cfg": {"binary": args.pycfg, "version": version, "flags": PYCFG_FLAGS,
                   "grammars": args.pycfg_grammars} if have_pycfg
        else {"binary": args.pycfg, "note": "binary not found: py-cfg was not run, no ratios"},
        "grammars": results,
    }
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
