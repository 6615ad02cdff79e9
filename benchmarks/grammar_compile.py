"""Seconds to read and compile a grammar against its number of rules (time should grow about linearly).

The grammar is the unigram word grammar with N extra word shapes, `Word --> X_i` and `X_i --> Char
Char ...`, all reachable, so every rule is compiled. Run with --sizes to choose N; each size is timed
in this process (the best of --repeats), and written as JSON with rules per second.

    python benchmarks/grammar_compile.py --sizes 1000 5000 10000 20000 --json grammar_compile.json
"""
import argparse
import json
import platform
import string
import time

from spacy_ag.core.compiled import CompiledGrammar
from spacy_ag.grammar.reader import parse_grammar_text


def grammar_text(extra: int) -> str:
    lines = ["1 1 Sentence --> Words", "1 1 Words --> Word", "1 1 Words --> Word Words",
             "Word --> Chars", "1 1 Chars --> Char", "1 1 Chars --> Char Chars"]
    lines += [f"1 1 Char --> {c}" for c in string.ascii_lowercase]
    for i in range(extra):
        lines.append(f"1 1 Word --> X{i}")
        lines.append(f"1 1 X{i} --> " + " ".join(["Char"] * (2 + i % 3)))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000, 20000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    rows = []
    for extra in args.sizes:
        text = grammar_text(extra)
        best = float("inf")
        for _ in range(args.repeats):
            started = time.perf_counter()
            grammar = parse_grammar_text(text)
            CompiledGrammar(grammar)
            best = min(best, time.perf_counter() - started)
        rows.append({"extra_words": extra, "rules": len(grammar.rules), "seconds": round(best, 4),
                     "rules_per_second": round(len(grammar.rules) / best)})
        print(f"{len(grammar.rules):>7} rules: {best:8.3f} s")
    with open(args.json, "w", encoding="utf8") as f:
        json.dump({"benchmark": "grammar_compile", "date": time.strftime("%Y-%m-%d"),
                   "python": platform.python_version(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
