"""The README's promises hold: its Python code runs, its commands exist, its links resolve.

The README is the first hour of a new user. Its Python blocks run here on the tiny generated data
they build themselves, in a temporary directory, so an API change that breaks them fails the
suite; every `spacy-ag` command it names must be a registered command; the Quickstart keeps
exactly the two commands of the house rule, and `.ci/run` runs the second one verbatim.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
INSTALL_AND_RUN = "pip install -e . && spacy-ag demo"
TEST_COMMAND = 'pip install -e ".[test,ray]" && python -m pytest -q --durations=25'


def _readme() -> str:
    return README.read_text(encoding="utf8")


def _blocks(text: str, language: str):
    """(first line number, code) of every fenced block of `language`."""
    out = []
    for match in re.finditer(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M):
        out.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    return out


def _user_docs():
    return [README] + sorted((REPO / "docs").glob("*.md"))


def test_readme_is_short_and_names_no_local_data_path():
    text = _readme()
    assert len(text.splitlines()) <= 300
    for page in _user_docs():
        assert "../shared" not in page.read_text(encoding="utf8"), page.name


def test_quickstart_is_the_two_commands_and_ci_runs_the_second():
    text = _readme()
    assert text.index("## Quickstart") < text.index("## Install") < text.index("## In Python")
    quickstart = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert [code.strip() for _, code in _blocks(quickstart, "bash")] == [INSTALL_AND_RUN, TEST_COMMAND]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf8")
    commands = [line for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-1] == TEST_COMMAND


def test_python_example_comes_within_the_first_hundred_lines():
    first_line, code = _blocks(_readme(), "python")[0]
    assert first_line <= 100
    assert first_line + len(code.splitlines()) <= 100
    assert "spacy.blank" in code and "nlp.pipe" in code


def test_every_command_the_readme_names_exists():
    import typer.main

    from spacy_ag.cli import app

    registered = set(typer.main.get_command(app).commands)
    text = _readme()
    code = [c for _, c in _blocks(text, "[a-z]+")] + re.findall(r"`([^`\n]+)`", text)
    named = {name for piece in code for name in re.findall(r"\bspacy-ag ([a-z][a-z-]*[a-z])", piece)}
    assert "demo" in named and "train" in named
    assert named <= registered, f"README names commands spacy-ag does not have: {sorted(named - registered)}"


def test_links_to_docs_resolve():
    broken = []
    for page in _user_docs():
        for target in re.findall(r"\]\(((?:docs/)?[\w.-]+\.md)(?:#[\w-]*)?\)", page.read_text(encoding="utf8")):
            base = REPO if page == README else page.parent
            if not (base / target).is_file():
                broken.append(f"{page.name} -> {target}")
    assert not broken, "links to missing pages: " + ", ".join(sorted(set(broken)))


@pytest.fixture(scope="module")
def readme_namespaces(tmp_path_factory):
    """Each Python block of the README run in order, in a fresh temporary working directory."""
    workdir = tmp_path_factory.mktemp("readme")
    old = Path.cwd()
    os.chdir(workdir)
    spaces = []
    try:
        for line, code in _blocks(_readme(), "python"):
            namespace = {"__name__": f"readme_block_line_{line}"}
            exec(compile(code, f"README.md:{line}", "exec"), namespace)
            spaces.append(namespace)
    finally:
        os.chdir(old)
    return workdir, spaces


def test_segmenter_example_runs_and_its_pipeline_reloads(readme_namespaces):
    import spacy

    workdir, spaces = readme_namespaces
    segmenter = next(ns for ns in spaces if "nlp" in ns)
    nlp, lines = segmenter["nlp"], segmenter["lines"]
    assert nlp.tokenizer.is_fitted
    docs = list(nlp.pipe(lines[:20]))
    for doc, line in zip(docs, lines):
        assert doc.text == line and "".join(t.text for t in doc) == line
    # it learned words: most lines are cut, and not into single letters
    assert sum(len(doc) > 1 for doc in docs) >= 10
    assert sum(len(t.text) for doc in docs for t in doc) / sum(len(doc) for doc in docs) > 1.5
    reloaded = spacy.load(workdir / "segmenter")
    assert [[t.text for t in d] for d in reloaded.pipe(lines[:20])] == [[t.text for t in d] for d in docs]


def test_topic_example_learns_the_new_words(readme_namespaces):
    _, spaces = readme_namespaces
    topics = next(ns for ns in spaces if "tm" in ns)
    tm = topics["tm"]
    top = [{w for w, _ in tm.top_words(k, 5)} for k in range(tm.n_topics)]
    politics = next(k for k in range(tm.n_topics) if "senate" in top[k])
    assert {"budget", "tax", "debate"} <= top[politics] and "goal" not in top[politics]
    assert {"coach", "goal", "bench"} <= top[1 - politics]
    theta = tm.infer([["debate", "tax"], ["bench"]])
    assert theta[0][politics] > 0.9 and theta[1][1 - politics] > 0.9
