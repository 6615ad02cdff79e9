"""Put the files of a real corpus into assets/, offline if there is a local copy.

    python scripts/fetch_corpora.py brent [--data-dir ../shared/data]
    python scripts/fetch_corpora.py pku --data-dir /path/to/data

For each file of the corpus (the `assets` of project.yml), in this order:

1. the destination (``assets/brent/gold.txt``, ...) is kept if its MD5 matches;
2. otherwise it is copied from the local copy ``DATA_DIR/<path>`` if that exists
   (``brent/br-phono.txt``, ``sighan2005/testing/pku_test.utf8``,
   ``sighan2005/gold/pku_test_gold.utf8``: the layout of the shared data folder);
3. otherwise it is downloaded from its public source (pinned commits), or from
   ``MIRROR/<path>`` with ``--mirror URL``.

Every file is checked against its MD5 before it is written, and written
atomically (a temporary file in the destination folder, then a rename), so a
failed or interrupted run never leaves a partial file. On failure the script
prints one line to stderr (what is missing, where it looked, what to do) and
exits with status 1; it never shows a traceback. The generated corpus
(``synthetic``) needs nothing: the script says so and exits 0.

Only the standard library is used, so the script runs before anything else is
installed. SIGHAN data is for research and non-commercial use only: do not
redistribute it, nor a pipeline trained on it.
"""
from __future__ import annotations

import argparse
import hashlib
import http.client
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional

from spacy_ag.archive import write_atomic_file


class CorpusFile(NamedTuple):
    dest: str  # file name below ASSETS/CORPUS/
    local: str  # path below the data folder
    url: str  # public source
    md5: str  # as in project.yml (weasel's checksum)


CORPORA: Dict[str, List[CorpusFile]] = {
    "brent": [
        CorpusFile(
            "gold.txt",
            "brent/br-phono.txt",
            "https://raw.githubusercontent.com/kamperh/dpdp_aernn/41092253a3819783aaf036d253ed83a065e128f3/data/br-phono.txt",
            "2d481ee22b9c06ee0f8f0a3dce12b2ba",
        ),
    ],
    "pku": [
        CorpusFile(
            "raw.txt",
            "sighan2005/testing/pku_test.utf8",
            "https://raw.githubusercontent.com/yuikns/icwb2-data/873a51fa6234c644126d2f2c5c603a97809d2e49/testing/pku_test.utf8",
            "fdf9780a29918d5168d51d6965a10838",
        ),
        CorpusFile(
            "gold.txt",
            "sighan2005/gold/pku_test_gold.utf8",
            "https://raw.githubusercontent.com/yuikns/icwb2-data/873a51fa6234c644126d2f2c5c603a97809d2e49/gold/pku_test_gold.utf8",
            "7375c40411bbfa6f10f1873dd204b47a",
        ),
    ],
}
GENERATED = {"synthetic": "the `generate` command writes it"}


class Failure(Exception):
    """One line for stderr."""


def one_line(text: object) -> str:
    return " ".join(str(text).split())


def md5_of(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def file_md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(url: str, timeout: float) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "spacy-ag-project/fetch_corpora"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def fetch(corpus: str, item: CorpusFile, *, assets: Path, data_dir: Path, mirror: Optional[str],
          md5: str, timeout: float) -> str:
    """Put one file in place; RETURNS the line to print; raises Failure."""
    dest = assets / corpus / item.dest
    if dest.is_file() and file_md5(dest) == md5:
        return f"✔ {dest}: present, MD5 matches"
    local = data_dir / item.local
    if local.is_file():
        data = local.read_bytes()
        if md5_of(data) != md5:
            raise Failure(f"{local} (local copy for {dest}) has MD5 {md5_of(data)}, not {md5}: "
                          f"it is not the file project.yml expects; replace it or remove it to download instead")
        write_atomic_file(dest, data)
        return f"✔ {dest}: copied from {local}"
    url = f"{mirror.rstrip('/')}/{item.local}" if mirror else item.url
    try:
        data = download(url, timeout)
    except urllib.error.HTTPError as err:
        reason = f"HTTP {err.code} {err.reason}"
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as err:
        # unreachable, refused, timed out, cut off, not a URL
        reason = getattr(err, "reason", None) or err
    else:
        if md5_of(data) != md5:
            raise Failure(f"{url} sent a file with MD5 {md5_of(data)}, not {md5}; {dest} not written "
                          f"(put the right file at {local} and run again)")
        write_atomic_file(dest, data)
        return f"✔ {dest}: downloaded from {url}"
    raise Failure(f"{dest} missing: no local copy at {local} and the download from {url} failed "
                  f"({one_line(reason)}); put {Path(item.local).name} there, pass --vars.data_dir DIR "
                  f"(the folder holding {item.local}), or run again online")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not usage + error
        print(f"✘ {self.prog}: {one_line(message)} (see --help)", file=sys.stderr)
        sys.exit(2)


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = Parser(prog="fetch_corpora.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", help=f"one of: {', '.join([*CORPORA, *GENERATED])}")
    parser.add_argument("--data-dir", type=Path, default=Path("assets"),
                        help="folder with the local copies, laid out as brent/br-phono.txt, "
                             "sighan2005/testing/pku_test.utf8, ... (default: assets)")
    parser.add_argument("--assets", type=Path, default=Path("assets"),
                        help="where the corpus folders go (default: assets, i.e. assets/CORPUS/FILE)")
    parser.add_argument("--mirror", default=os.environ.get("SPACY_AG_CORPUS_MIRROR") or None,
                        help="download from MIRROR/<path below the data folder> instead of the public "
                             "sources (default: $SPACY_AG_CORPUS_MIRROR)")
    parser.add_argument("--md5", action="append", default=[], metavar="FILE=HEX",
                        help="expected MD5 of FILE (gold.txt, raw.txt) instead of project.yml's; repeatable")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per download (default: 30)")
    return parser.parse_args(argv)


def run(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if args.corpus in GENERATED:
        print(f"✔ nothing to fetch for {args.corpus}: {GENERATED[args.corpus]}")
        return 0
    if args.corpus not in CORPORA:
        raise Failure(f"unknown corpus {args.corpus!r}: choose one of {', '.join([*CORPORA, *GENERATED])}")
    items = CORPORA[args.corpus]
    expected = {item.dest: item.md5 for item in items}
    for pair in args.md5:
        name, sep, value = pair.partition("=")
        if not sep or name not in expected or len(value) != 32 or any(c not in "0123456789abcdefABCDEF" for c in value):
            raise Failure(f"--md5 {pair!r}: expected FILE=HEX with FILE one of {', '.join(expected)} "
                          f"and HEX 32 hex digits")
        expected[name] = value.lower()
    for item in items:
        print(fetch(args.corpus, item, assets=args.assets, data_dir=args.data_dir, mirror=args.mirror,
                    md5=expected[item.dest], timeout=args.timeout), flush=True)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    try:
        return run(argv)
    except Failure as err:
        print(f"✘ {one_line(err)}", file=sys.stderr)
    except KeyboardInterrupt:
        print("✘ interrupted; no partial file was left", file=sys.stderr)
        return 130
    except Exception as err:  # anything unforeseen (disk full, permissions): still one line
        print(f"✘ {type(err).__name__}: {one_line(err)}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
