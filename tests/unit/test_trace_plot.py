"""`spacy-ag plot`: the trace of real (tiny) training runs, MCMC with two chains, online, topic models."""
from __future__ import annotations

import json
import random
import sys

import pytest
from typer.testing import CliRunner

from spacy_ag.cli import app
from spacy_ag.cli.trace_plot import read_trace, trace_groups, trace_rows
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_gold, write_raw
from conftest import ONLINE_CONFIG, UNIGRAM, assert_one_error_line, engine_config

TOPIC_CONFIG = """\
[paths]
train = "{docs}"

[corpus]
path = ${{paths.train}}
heldout_fraction = 0.2

[topics]
n_topics = 3
passes = 1
sweeps = 6
inference = "{inference}"

[online]
batch_size = 10
refine_every = 3
default_truncation = 60

[training]
seed = 0
"""


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Output directories of four short runs: MCMC (2 chains, token F), online (token F), topics by Gibbs and online."""
    root = tmp_path_factory.mktemp("trace_plot")
    utterances = generate_corpus(make_lexicon(12, alphabet="abcdefgh", min_len=2, max_len=4, seed=4), 120,
                                 mean_words=3.0, seed=5)
    write_raw(root / "raw.txt", utterances)
    write_gold(root / "gold.txt", utterances)
    (root / "grammars").mkdir()
    (root / "grammars" / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    (root / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    (root / "mcmc.cfg").write_text(engine_config(iterations=6, checkpoint_every=100), encoding="utf8")
    (root / "online.cfg").write_text(ONLINE_CONFIG.format(train=root / "gold.txt", mode="online", passes=2),
                                     encoding="utf8")
    rng = random.Random(0)
    vocab = [["".join(rng.choice("abcdefghijkl") for _ in range(rng.randint(3, 5))) for _ in range(6)]
             for _ in range(3)]
    docs = [" ".join(rng.choice(vocab[d % 3]) for _ in range(12)) for d in range(60)]
    (root / "docs.txt").write_text("\n".join(docs) + "\n", encoding="utf8")
    for inference in ("gibbs", "online"):
        (root / f"topics-{inference}.cfg").write_text(TOPIC_CONFIG.format(docs=root / "docs.txt",
                                                                          inference=inference), encoding="utf8")
    commands = {
        "mcmc": ["train", root / "mcmc.cfg", "--output", root / "mcmc", "--paths.train", root / "raw.txt",
                 "--paths.gold", root / "gold.txt", "--training.chains", 2, "--training.workers", 1,
                 "--training.eval_every", 3],
        "online": ["train", root / "online.cfg", "--output", root / "online", "--training.eval_every", 4],
        "topics-gibbs": ["train", root / "topics-gibbs.cfg", "--output", root / "topics-gibbs"],
        "topics-online": ["train", root / "topics-online.cfg", "--output", root / "topics-online"],
    }
    for name, command in commands.items():
        result = _run(*command)
        assert result.exit_code == 0, (name, result.output)
    return root


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


# the figure is 12 x (2.5 rows + 0.8) inches at 110 dpi
def _expected_size(rows: int):
    return 1320, round((2.5 * rows + 0.8) * 110)


@pytest.mark.parametrize("name, kind, chains, titles", [
    ("mcmc", "mcmc", 2, ["log posterior", "tables per adaptor", "Pitman-Yor a per adaptor",
                         "Pitman-Yor b per adaptor", "token F"]),
    ("online", "online", 1, ["minibatch log likelihood", "grammaton entries per adaptor",
                             "Pitman-Yor a per adaptor", "Pitman-Yor b per adaptor", "token F"]),
    ("topics-gibbs", "gibbs", 1, ["log posterior", "tables per adaptor", "Pitman-Yor b per adaptor"]),
    ("topics-online", "online", 1, ["minibatch log likelihood", "grammaton entries per adaptor",
                                    "Pitman-Yor a per adaptor", "Pitman-Yor b per adaptor"]),
])
def test_plot_writes_the_figure_of_each_kind_of_run(runs, name, kind, chains, titles):
    out = runs / f"{name}.png"
    result = _run("plot", runs / name, "--output", out)
    assert result.exit_code == 0, result.output
    trace, lines = read_trace(runs / name)
    groups = trace_groups(lines)
    assert [(g.kind, g.chain) for g in groups] == [(kind, c) for c in range(chains)]
    rows = trace_rows(groups)
    assert [title for title, _ in rows] == titles
    assert _png_size(out) == _expected_size(len(rows))
    for g in groups:
        mine = [line for line in lines if int(line.get("chain", 0)) == g.chain]
        assert g.steps == sorted(float(line["minibatch" if kind == "online" else "iteration"]) for line in mine)
        assert all(b > a for a, b in zip(g.seconds, g.seconds[1:]))  # training time only grows
        if kind != "gibbs":  # lines hold the seconds since the previous line: summed
            assert g.seconds[-1] == pytest.approx(sum(line["seconds"] for line in mine))
        else:  # lines hold the seconds since the first sweep
            assert g.seconds == [line["seconds"] for line in mine]
    # every chain of the run is a curve of the first row, with the trace's own values
    first = rows[0][1]
    key = "batch_loglik" if kind == "online" else "log_posterior"
    assert [(g.chain, [p[2] for p in points]) for g, _, points in first] == \
        [(g.chain, [line[key] for line in g.lines]) for g in groups]


def test_tables_per_adaptor_and_token_f_come_from_the_trace(runs):
    _, lines = read_trace(runs / "mcmc")
    rows = dict(trace_rows(trace_groups(lines)))
    tables = {(g.chain, name): [p[2] for p in points] for g, name, points in rows["tables per adaptor"]}
    for chain in (0, 1):
        mine = sorted((line for line in lines if line["chain"] == chain), key=lambda line: line["iteration"])
        assert tables[(chain, "Word")] == [line["tables"]["Word"] for line in mine]
        token_f = [p for g, _, points in rows["token F"] if g.chain == chain for p in points]
        assert [(x, f) for x, _, f in token_f] == [(float(line["iteration"]), line["token_f"]) for line in mine
                                                   if "token_f" in line] and len(token_f) == 2


def test_a_resumed_step_keeps_its_last_line_and_seconds_continue(tmp_path):
    lines = [{"iteration": 1, "log_posterior": -5.0, "seconds": 1.0},
             {"iteration": 2, "log_posterior": -4.0, "seconds": 1.0},
             {"iteration": 2, "log_posterior": -3.5, "seconds": 2.0},  # the same step again, after a resume
             {"iteration": 1, "log_posterior": -9.0, "alpha_sum": 1.0, "b_median": 2.0, "seconds": 0.5},
             {"iteration": 2, "log_posterior": -8.0, "alpha_sum": 1.0, "b_median": 2.0, "seconds": 0.7},
             {"iteration": 3, "log_posterior": -7.0, "alpha_sum": 1.0, "b_median": 2.0, "seconds": 0.1}]
    gibbs, mcmc = trace_groups(lines)  # in (component, chain, kind) order
    assert (mcmc.kind, mcmc.steps, mcmc.seconds) == ("mcmc", [1.0, 2.0], [1.0, 3.0])
    assert [line["log_posterior"] for line in mcmc.lines] == [-5.0, -3.5]
    assert (gibbs.kind, gibbs.seconds) == ("gibbs", pytest.approx([0.5, 0.7, 0.8]))


def test_plot_without_matplotlib_is_one_coded_line(runs, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the extra were not installed
    result = _run("plot", runs / "online", "--output", runs / "none.png")
    assert_one_error_line(result, "[E140]", "pip install spacy-ag[plot]")
    assert not (runs / "none.png").exists()


def test_plot_errors_are_one_coded_line(tmp_path):
    assert_one_error_line(_run("plot", tmp_path), "[E141]", str(tmp_path))
    (tmp_path / "trace.jsonl").write_text('{"iteration": 1, "log_posterior": -3.0, "seconds": 0.1}\nnot json\n',
                                          encoding="utf8")
    assert_one_error_line(_run("plot", tmp_path), "[E142]", f"{tmp_path / 'trace.jsonl'}:2")
    (tmp_path / "trace.jsonl").write_text(json.dumps({"sweeps": 3}) + "\n", encoding="utf8")
    assert_one_error_line(_run("plot", tmp_path / "trace.jsonl"), "[E143]")
