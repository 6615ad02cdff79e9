"""The assets of the weasel project (project.yml) and scripts/fetch_corpora.py.

A fresh clone has no local copy of the corpora and maybe no network: `spacy
project assets` (with or without --extra) must end without a traceback, and
the `corpora` command must either put checked files in place or say in one
line what is missing. Nothing here uses the network (downloads go to a closed
port or to a server on 127.0.0.1) or the shared data folder.
"""
from __future__ import annotations

import functools
import hashlib
import http.server
import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import srsly

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "fetch_corpora.py"


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _load_script():
    spec = importlib.util.spec_from_file_location("fetch_corpora", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _closed_port_url() -> str:
    """http://127.0.0.1:PORT with nothing listening: connections are refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _env(mirror=None):
    env = dict(os.environ)
    # never the public sources, even if a test forgets --mirror
    env["SPACY_AG_CORPUS_MIRROR"] = mirror or _closed_port_url()
    return env


def fetch(*args, cwd, mirror=None):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], cwd=cwd, env=_env(mirror),
                          capture_output=True, text=True, encoding="utf8", timeout=120)


def assert_one_line_failure(result, *fragments, code=1):
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("✘ "), lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def _files(root: Path):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.fixture
def project(tmp_path):
    """A copy of the project's weasel files, without assets (a fresh clone)."""
    root = tmp_path / "clone"
    root.mkdir()
    shutil.copy(REPO / "project.yml", root / "project.yml")
    shutil.copytree(REPO / "scripts", root / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    return root


# ---------------------------------------------------------------- project.yml


def test_one_asset_per_destination_and_the_script_agrees(project, capsys):
    from weasel.schemas import ProjectConfigSchema, validate
    from weasel.util import load_project_config

    raw = srsly.read_yaml(project / "project.yml")
    assert not validate(ProjectConfigSchema, raw)
    config = load_project_config(project)
    out = capsys.readouterr().out
    assert "deprecated" not in out, out  # e.g. a `spacy_version` key: weasel 1.x warns on every command
    assets = config["assets"]
    dests = [a["dest"] for a in assets]
    assert len(dests) == len(set(dests)), dests
    assert set(dests) == {"assets/brent/gold.txt", "assets/pku/raw.txt", "assets/pku/gold.txt"}
    for asset in assets:
        assert re.fullmatch(r"[0-9a-f]{32}", asset["checksum"]), asset
        # weasel would fetch a URL with a traceback when offline: the `corpora` command fetches them
        assert "url" not in asset and "git" not in asset, asset
        assert asset.get("extra") is True, asset  # optional: the default workflow needs none
    script = _load_script()
    table = {f"assets/{corpus}/{item.dest}": item.md5 for corpus, items in script.CORPORA.items() for item in items}
    assert table == {a["dest"]: a["checksum"] for a in assets}
    # the data_dir default exists in every clone (weasel creates `directories` on load)
    assert not Path(config["vars"]["data_dir"]).is_absolute()
    assert (project / config["vars"]["data_dir"]).is_dir()
    assert "shared" not in str(config["vars"]["data_dir"])
    commands = {c["name"]: c for c in config["commands"]}
    assert "scripts/fetch_corpora.py" in commands["corpora"]["script"][0]
    assert commands["corpora"].get("no_skip") is True
    assert "assets/synthetic/gold.txt" in commands["preprocess"]["deps"]  # vars.corpus = synthetic


def test_spacy_version_is_pinned_in_pyproject():
    """The spaCy requirement lives in pyproject.toml (weasel ignores project.yml's `spacy_version`)."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf8")
    assert '"spacy>=3.8,<4"' in text


@pytest.mark.parametrize("extra", [False, True])
def test_spacy_project_assets_in_a_fresh_clone(project, extra):
    args = [sys.executable, "-m", "spacy", "project", "assets", str(project)] + (["--extra"] if extra else [])
    result = subprocess.run(args, cwd=project, env=_env(), capture_output=True, text=True, encoding="utf8",
                            timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output and "Error" not in output, output
    assert len(output.strip().splitlines()) <= 8, output
    assert _files(project / "assets") == []


# ---------------------------------------------------------------- scripts/fetch_corpora.py


def test_missing_and_unreachable_is_one_line(tmp_path):
    empty = tmp_path / "data"
    empty.mkdir()
    mirror = _closed_port_url()
    result = fetch("brent", "--data-dir", empty, "--assets", tmp_path / "assets", "--mirror", mirror,
                   "--timeout", 5, cwd=tmp_path)
    line = assert_one_line_failure(result, str(empty / "brent" / "br-phono.txt"), mirror, "missing",
                                   "--vars.data_dir")
    assert result.stdout == "", result.stdout
    assert _files(tmp_path / "assets") == [], line  # nothing written, not even a partial file


def test_unreachable_mirror_from_the_environment(tmp_path):
    """No --mirror: $SPACY_AG_CORPUS_MIRROR (set to a closed port here) replaces the public sources."""
    mirror = _closed_port_url()
    result = fetch("pku", "--data-dir", tmp_path / "nowhere", cwd=tmp_path, mirror=mirror)
    assert_one_line_failure(result, mirror, "assets/pku/raw.txt")
    assert _files(tmp_path / "assets") == []


def test_copies_from_the_data_dir(tmp_path):
    data = tmp_path / "data"
    raw = "他说的确实在理\n今天天气很好\n".encode("utf8")
    gold = "他 说 的 确实 在理\n今天 天气 很 好\n".encode("utf8")
    (data / "sighan2005" / "testing").mkdir(parents=True)
    (data / "sighan2005" / "gold").mkdir(parents=True)
    (data / "sighan2005" / "testing" / "pku_test.utf8").write_bytes(raw)
    (data / "sighan2005" / "gold" / "pku_test_gold.utf8").write_bytes(gold)
    checks = ["--md5", f"raw.txt={_md5(raw)}", "--md5", f"gold.txt={_md5(gold)}"]
    result = fetch("pku", "--data-dir", data, *checks, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert (tmp_path / "assets" / "pku" / "raw.txt").read_bytes() == raw
    assert (tmp_path / "assets" / "pku" / "gold.txt").read_bytes() == gold
    assert _files(tmp_path / "assets") == ["pku/gold.txt", "pku/raw.txt"]  # no temporary files left
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == [
        "✔ assets/pku/raw.txt", "✔ assets/pku/gold.txt"]
    assert "copied from" in result.stdout
    # a second run keeps the files, even without the local copy
    shutil.rmtree(data)
    again = fetch("pku", "--data-dir", data, *checks, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("present, MD5 matches") == 2


def test_replaces_a_wrong_file_and_refuses_a_wrong_copy(tmp_path):
    data = tmp_path / "data"
    (data / "brent").mkdir(parents=True)
    good = b"ba kiro mu pe N3 gOt\nzEf NOp\n"
    (data / "brent" / "br-phono.txt").write_bytes(good)
    dest = tmp_path / "assets" / "brent" / "gold.txt"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"truncated")
    result = fetch("brent", "--data-dir", data, "--md5", f"gold.txt={_md5(good)}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert dest.read_bytes() == good
    # the project's checksum (the real br-phono.txt): a made-up local copy is refused, nothing written
    dest.unlink()
    bad = fetch("brent", "--data-dir", data, cwd=tmp_path)
    assert_one_line_failure(bad, str(data / "brent" / "br-phono.txt"), "MD5", _md5(good))
    assert not dest.exists()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def mirror(tmp_path):
    """An HTTP server on 127.0.0.1 serving tmp_path/mirror (laid out like the data folder)."""
    root = tmp_path / "mirror"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_downloads_checks_and_writes_atomically(tmp_path, mirror):
    root, url = mirror
    (root / "brent").mkdir()
    good = b"ba kiro mu pe N3 gOt\n"
    (root / "brent" / "br-phono.txt").write_bytes(good)
    dest = tmp_path / "assets" / "brent" / "gold.txt"
    # checksum mismatch (the project's MD5 is the real file's): one line, nothing written
    bad = fetch("brent", "--data-dir", tmp_path / "nowhere", "--mirror", url, cwd=tmp_path)
    assert_one_line_failure(bad, f"{url}/brent/br-phono.txt", _md5(good), "not written")
    assert _files(tmp_path / "assets") == []
    ok = fetch("brent", "--data-dir", tmp_path / "nowhere", "--mirror", url, "--md5", f"gold.txt={_md5(good)}",
               cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert dest.read_bytes() == good and f"downloaded from {url}/brent/br-phono.txt" in ok.stdout
    # a file the mirror does not have: HTTP 404 in one line
    missing = fetch("pku", "--data-dir", tmp_path / "nowhere", "--mirror", url, "--md5", f"raw.txt={_md5(good)}",
                    cwd=tmp_path)
    assert_one_line_failure(missing, "HTTP 404", "assets/pku/raw.txt")


def test_other_failures_are_one_line_too(tmp_path):
    assert fetch("synthetic", cwd=tmp_path).returncode == 0
    assert_one_line_failure(fetch("nope", cwd=tmp_path), "unknown corpus", "brent")
    assert_one_line_failure(fetch(cwd=tmp_path), "corpus", code=2)  # usage error
    assert_one_line_failure(fetch("brent", "--md5", "gold.txt=xyz", cwd=tmp_path), "--md5")
    data = tmp_path / "data"
    (data / "brent").mkdir(parents=True)
    text = b"a b\n"
    (data / "brent" / "br-phono.txt").write_bytes(text)
    (tmp_path / "blocked").write_text("a file where the assets folder should be")
    assert_one_line_failure(fetch("brent", "--data-dir", data, "--assets", tmp_path / "blocked",
                                  "--md5", f"gold.txt={_md5(text)}", cwd=tmp_path), "blocked")
