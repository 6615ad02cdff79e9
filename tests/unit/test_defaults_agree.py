"""The defaults agree everywhere: the Python API, the components' default configs and the shipped configs.

For every component (the segmenter tokenizer, ``ag_parser``, ``ag_topics``, `AdaptorGrammar`,
`TopicModel`) each setting that two of these places share has one value, the one of
`spacy_ag.settings`; a change made in one place only fails here. A shipped config may differ
from the defaults only in the settings listed below with the reason (its corpus or its task).
"""
from __future__ import annotations

import dataclasses
import inspect
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
import spacy
from confection import Config
from spacy.training import Example

from spacy_ag.components.segmenter import BUILTIN_GRAMMARS
from spacy_ag.settings import (
    AUTO_UNITS, DEFAULT_A, DEFAULT_B, LANGUAGE_UNITS, UNIT_CHOICES, GrammarSettings, OnlineSettings,
    ParserSettings, SamplerSettings, SegmenterSettings, TopicComponentSettings, TopicModelSettings, TopicSettings,
    TrainingSettings, check, defaults, topic_online_settings, units_for_language,
)
from spacy_ag.topics import TopicModel

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

#: Settings a shipped pipeline config chooses for its task, with the reason; everything else is the default.
PIPELINE_CHOICES = {
    # the phoneme strings of Brent use ( and ) as vowels: only whitespace is a boundary there
    "pipeline-brent-unigram.cfg": {"boundary_chars"},
    "pipeline-brent-colloc.cfg": {"boundary_chars", "grammar"},
    # the collocation pipelines are named for their grammar
    "pipeline-zh-colloc.cfg": {"grammar"},
    "pipeline-zh-unigram.cfg": set(),
}
#: configs/morphology/pipeline-en.cfg: ag_parser set up for morphology (token mode on word types, the
#: class grammar of [JGG06], its spans under their own key, more sweeps on the short word types, the
#: grammar's a and b kept, the MCMC fit final since there is no dev data for spaCy's loop).
MORPHOLOGY_CHOICES = {"grammar", "mode", "train_on", "spans_key", "iterations", "sampler", "online_updates"}
#: configs/topics/pipeline-topics.cfg: ag_topics with 20 topics for its corpus; de-news.cfg has the default 5.
TOPIC_PIPELINE_CHOICES = {"n_topics"}


def read_config(path: Path) -> Config:
    return Config().from_disk(path, interpolate=False)


def model_defaults(function, names):
    """The keyword defaults of `function` for `names`."""
    params = inspect.signature(function).parameters
    return {name: params[name].default for name in names}


def topic_model_settings(model: TopicModel):
    """What a `TopicModel` was built with, as `TopicModelSettings` names them."""
    out = {name: getattr(model, name) for name in dataclasses.asdict(TopicModelSettings()) if name != "passes"}
    out["online"] = model.online
    return out


# ---------------------------------------------------------------------------
# TopicModel and ag_topics


def test_topic_model_keywords_are_the_settings_defaults():
    settings = defaults(TopicModelSettings)
    shared = [name for name in settings if name != "passes"]
    assert model_defaults(TopicModel.__init__, shared) == {k: settings[k] for k in shared}
    assert model_defaults(TopicModel.fit, ["passes"]) == {"passes": settings["passes"]}
    model = TopicModel()
    assert topic_model_settings(model) == {**{k: settings[k] for k in shared}, "online": topic_online_settings()}
    # the measured best for a corpus in memory: Gibbs sweeps over a shared lexicon
    assert (model.inference, model.word_adapted, model.sample_b) == ("gibbs", True, True)


def test_topic_component_default_config_is_the_settings_defaults():
    from spacy_ag.components.topic_tagger import make_ag_topics

    registered = spacy.Language.get_factory_meta("ag_topics").default_config
    assert registered == defaults(TopicComponentSettings)
    signature = inspect.signature(make_ag_topics).parameters
    assert {name: signature[name].default for name in registered} == registered
    pipe = spacy.blank("xx").add_pipe("ag_topics")
    assert pipe.cfg == defaults(TopicComponentSettings)
    # the model the component trains is the one TopicModel's defaults make (the online minibatch and the
    # truncation are the topic online defaults too)
    assert topic_model_settings(pipe._new_model()) == topic_model_settings(TopicModel())
    assert pipe.cfg["passes"] == TopicModelSettings.passes
    # the topics of initialize stay as they are unless asked
    assert pipe.cfg["online_updates"] is False and not pipe.is_trainable


def test_shipped_topic_configs_are_the_defaults():
    from spacy_ag.train.topic_training import _new_model

    config = read_config(CONFIGS / "topics" / "de-news.cfg")
    topics = check(TopicSettings, dict(config["topics"]), "topics")
    assert dataclasses.asdict(topics) == defaults(TopicSettings)
    online = check(OnlineSettings, dict(config["online"]), "online")
    assert online == topic_online_settings()
    # the model `spacy-ag train` builds from it is TopicModel()'s
    assert topic_model_settings(_new_model(topics, online)) == topic_model_settings(TopicModel())

    pipeline = read_config(CONFIGS / "topics" / "pipeline-topics.cfg")
    component = dict(pipeline["components"]["ag_topics"])
    assert component.pop("factory") == "ag_topics"
    settings = dataclasses.asdict(check(TopicComponentSettings, component, "components.ag_topics"))
    differ = {k for k, v in settings.items() if v != defaults(TopicComponentSettings)[k]}
    assert differ == TOPIC_PIPELINE_CHOICES, differ
    assert set(component) == set(defaults(TopicComponentSettings))  # the shipped config is complete


def planted_documents(n_topics=3, per_topic=8, n_docs=90, length=20, seed=0):
    """Documents of made-up words, document d about topic d mod n_topics (85% of its tokens)."""
    rng = random.Random(seed)
    words = sorted({"".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 5))) for _ in range(200)})
    rng.shuffle(words)
    vocab = [words[k * per_topic:(k + 1) * per_topic] for k in range(n_topics)]
    docs = [[rng.choice(vocab[d % n_topics] if rng.random() < 0.85 else vocab[rng.randrange(n_topics)])
             for _ in range(length)] for d in range(n_docs)]
    return vocab, docs


def test_python_api_and_component_train_the_same_topics():
    """`TopicModel(n_topics=K).fit(docs)` and `nlp.add_pipe("ag_topics", config={"n_topics": K})`:
    the same Gibbs sampler with the shared lexicon, the same topics, the rank history kept."""
    vocab, docs = planted_documents()
    model = TopicModel(n_topics=3).fit(docs)
    assert model.inference == "gibbs" and "WORD" in model.compiled.adapted
    nlp = spacy.blank("xx")
    nlp.add_pipe("ag_topics", config={"n_topics": 3})
    nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(" ".join(d)), {}) for d in docs])
    piped = nlp.get_pipe("ag_topics").model
    assert piped.inference == "gibbs" and "WORD" in piped.compiled.adapted
    np.testing.assert_array_equal(piped.get_topics()[0], model.get_topics()[0])
    assert piped.topics(8) == model.topics(8)
    # the first documents, one per planted topic, land in three different topics
    first = [int(np.argmax(d._.ag_topics)) for d in nlp.pipe(" ".join(d) for d in docs[:3])]
    assert sorted(first) == [0, 1, 2]
    # the ranking was recorded every history_every sweeps, then after the last
    sweeps, every = TopicModelSettings.sweeps, TopicModelSettings.history_every
    assert [snap["sweep"] for snap in model.history] == list(range(every, sweeps, every)) + [sweeps]


def test_partial_fit_and_updates_stay_online():
    _, docs = planted_documents()
    streamed = TopicModel(n_topics=3).partial_fit(docs, seed=0)
    assert streamed.inference == "online" and streamed.learner.minibatches > 0
    fitted = TopicModel(n_topics=3).fit(docs[:30])
    fitted.partial_fit(docs[30:], seed=1)
    assert fitted.inference == "gibbs" and fitted.learner.minibatches > 0  # a Gibbs model continued online
    nlp = spacy.blank("xx")
    nlp.add_pipe("ag_topics", config={"n_topics": 3, "online_updates": True})
    nlp.initialize()
    nlp.update([Example.from_dict(nlp.make_doc(" ".join(d)), {}) for d in docs[:10]])
    assert nlp.get_pipe("ag_topics").model.inference == "online"


# ---------------------------------------------------------------------------
# the segmenter and ag_parser: units by language, iterations, the shipped pipelines


@pytest.mark.parametrize("lang", sorted(LANGUAGE_UNITS) + ["xx", "en", "de"])
def test_segmenter_units_follow_the_language_as_init_config_writes_them(lang):
    from spacy_ag.train.starter_config import init_config_text

    assert SegmenterSettings.units == ParserSettings.units == AUTO_UNITS
    written = Config().from_str(init_config_text(lang=lang), interpolate=False)["nlp"]["tokenizer"]["units"]
    assert written == units_for_language(lang) == LANGUAGE_UNITS.get(lang, UNIT_CHOICES[0])
    nlp = spacy.blank(lang, config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1"}}})
    assert nlp.tokenizer.cfg["units"] == written
    assert nlp.add_pipe("ag_parser").cfg["units"] == written


def test_segmenter_units_in_chinese_text_and_explicit_units_kept(tmp_path):
    nlp = spacy.blank("zh", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1"}}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unfitted: one token per unit
        assert [t.text for t in nlp("2001年GDP")] == ["2001", "年", "GDP"]
    nlp.to_disk(tmp_path / "auto")
    assert spacy.load(tmp_path / "auto").tokenizer.cfg["units"] == "alnum-runs"
    # a setting given in the config (as every saved pipeline of earlier versions has one) is kept
    explicit = spacy.blank("zh", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1",
                                                               "units": "graphemes"}}})
    assert explicit.tokenizer.cfg["units"] == "graphemes"
    explicit.to_disk(tmp_path / "explicit")
    assert spacy.load(tmp_path / "explicit").tokenizer.cfg["units"] == "graphemes"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [t.text for t in explicit("2001年")] == ["2", "0", "0", "1", "年"]


def test_adaptor_grammar_units_follow_the_language():
    from spacy_ag.model import AdaptorGrammar

    grammar = CONFIGS / "grammars" / "chinese-unigram.lt"
    assert AdaptorGrammar(grammar).units == GrammarSettings.units == units_for_language(None)
    assert AdaptorGrammar(grammar, lang="zh").units == units_for_language("zh") == "alnum-runs"
    assert AdaptorGrammar(grammar, lang="en").units == "graphemes"
    assert AdaptorGrammar(grammar, lang="zh", units="codepoints").units == "codepoints"


def test_init_config_iterations_are_the_segmenter_default():
    from spacy_ag.cli.init_config import init_config_cli
    from spacy_ag.train.starter_config import init_config_text

    tokenizer = Config().from_str(init_config_text(), interpolate=False)["nlp"]["tokenizer"]
    assert (tokenizer["iterations"], tokenizer["chains"]) == (SegmenterSettings.iterations, SegmenterSettings.chains)
    options = inspect.signature(init_config_cli).parameters
    assert options["iterations"].default.default == SegmenterSettings.iterations
    assert options["chains"].default.default == SegmenterSettings.chains


@pytest.mark.parametrize("name", sorted(PIPELINE_CHOICES))
def test_shipped_segmenter_pipelines_are_init_config_and_the_defaults(name):
    from spacy_ag.train.starter_config import init_config_text

    config = read_config(CONFIGS / name)
    lang, tokenizer = config["nlp"]["lang"], dict(config["nlp"]["tokenizer"])
    phonemes = tokenizer["boundary_chars"] == ""
    written = Config().from_str(init_config_text(lang=lang, grammar=tokenizer["grammar"], phonemes=phonemes),
                                interpolate=False)
    assert dict(written["nlp"]["tokenizer"]) == tokenizer
    tokenizer.pop("@tokenizers")
    tokenizer.pop("scorer")
    settings = dataclasses.asdict(check(SegmenterSettings, tokenizer, "nlp.tokenizer"))
    expected = {**defaults(SegmenterSettings), "units": units_for_language(lang)}
    differ = {k for k, v in settings.items() if v != expected[k]}
    assert differ == PIPELINE_CHOICES[name], differ
    assert tokenizer["grammar"] in BUILTIN_GRAMMARS


def test_segmenter_and_parser_component_defaults():
    registered = spacy.Language.get_factory_meta("ag_parser").default_config
    assert registered == defaults(ParserSettings)
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1"}}})
    assert nlp.tokenizer.cfg == {**defaults(SegmenterSettings), "units": units_for_language("xx")}
    assert nlp.add_pipe("ag_parser").cfg == {**defaults(ParserSettings), "units": units_for_language("xx")}


def test_shipped_morphology_pipeline_differs_only_in_its_task():
    config = read_config(CONFIGS / "morphology" / "pipeline-en.cfg")
    component = dict(config["components"]["ag_parser"])
    assert component.pop("factory") == "ag_parser"
    settings = dataclasses.asdict(check(ParserSettings, component, "components.ag_parser"))
    expected = {**defaults(ParserSettings), "units": units_for_language(config["nlp"]["lang"])}
    settings["units"] = expected["units"] if settings["units"] == AUTO_UNITS else settings["units"]
    differ = {k for k, v in settings.items() if v != expected[k]}
    assert differ == MORPHOLOGY_CHOICES, differ


# ---------------------------------------------------------------------------
# AdaptorGrammar and the engine configs


def test_adaptor_grammar_keywords_are_the_settings_defaults():
    from spacy_ag.model import AdaptorGrammar

    training = defaults(TrainingSettings)
    # backend and ray_address: None stands for their [training] defaults
    shared = [name for name in inspect.signature(AdaptorGrammar.fit).parameters
              if name in training and name not in ("backend", "ray_address")]
    assert len(shared) >= 9
    assert model_defaults(AdaptorGrammar.fit, shared) == {k: training[k] for k in shared}
    run = AdaptorGrammar._training_settings(None, None, training["workers"])
    assert (run.backend, run.ray_address) == (training["backend"], training["ray_address"])
    model = AdaptorGrammar(CONFIGS / "grammars" / "brent-unigram.lt")
    assert model.sampler == SamplerSettings() and model.online == OnlineSettings()
    assert model.max_span == GrammarSettings.max_span and model.units == GrammarSettings.units


def engine_configs():
    return sorted(p for p in CONFIGS.glob("*.cfg") if "nlp" not in read_config(p))


def test_engine_configs_agree_with_the_defaults():
    """The J&G (2009) reproductions are the sampler and [training] defaults (which are that paper's);
    every Chinese config reads the units of Chinese, except the [ZBC14] reproduction (one character
    per terminal, as that paper has it); only the online configs change the grammar's a (ZBC14's a = 0)."""
    configs = engine_configs()
    assert len(configs) >= 10
    for path in configs:
        config = read_config(path)
        grammar = check(GrammarSettings, dict(config["grammar"]), "grammar")
        if path.name.endswith("-jg09.cfg"):
            assert check(SamplerSettings, dict(config["sampler"]), "sampler") == SamplerSettings(), path.name
            training = check(TrainingSettings, dict(config["training"]), "training")
            for key in ("iterations", "chains", "burn_in", "sample_every"):
                assert getattr(training, key) == getattr(TrainingSettings, key), (path.name, key)
        if path.name.startswith("chinese-") and not path.name.endswith("-zbc14.cfg"):
            assert grammar.units == units_for_language("zh"), path.name
        elif path.name.startswith("brent-"):  # phoneme strings: one phoneme per grapheme
            assert grammar.units == GrammarSettings.units, path.name
        assert grammar.default_b == DEFAULT_B, path.name
        assert grammar.default_a == (0.0 if path.name.endswith("-online.cfg") else DEFAULT_A), path.name


def _settings_names():
    """Every setting name of `spacy_ag.settings`' dataclasses."""
    import spacy_ag.settings as settings_module

    names = set()
    for value in vars(settings_module).values():
        if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == settings_module.__name__:
            names.update(f.name for f in dataclasses.fields(value))
    return names


#: Keywords named like a setting whose API default is another on purpose, with the reason.
API_OWN_DEFAULTS = {
    # one pass over a live stream reads it lazily, a minibatch at a time: no shuffling window unless
    # asked for; fit_stream, which replays the stream as [inference] stream = true does, has the setting's
    "AdaptorGrammar.partial_fit(shuffle_buffer=0)",
}


def literal_setting_defaults(source: str, classes, settings_names) -> list:
    """Public methods of `classes` (and their __init__) in `source` whose keyword named like a
    setting has a literal default: the value written a second time, beside settings.py."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ClassDef) and node.name in classes):
            continue
        for func in node.body:
            if not isinstance(func, ast.FunctionDef) or (func.name.startswith("_") and func.name != "__init__"):
                continue
            args = func.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            for arg, default in pairs:
                if arg.arg in settings_names and isinstance(default, ast.Constant) and default.value is not None:
                    found.append(f"{node.name}.{func.name}({arg.arg}={default.value!r})")
    return found


def test_no_setting_default_is_written_twice():
    """The models' keyword defaults that are settings come from settings.py (``_RUN.seed``,
    ``_DEFAULT.history_size``), never as a literal written beside it."""
    import spacy_ag

    package = Path(spacy_ag.__file__).parent
    names = _settings_names()
    found = literal_setting_defaults((package / "model.py").read_text(encoding="utf8"), {"AdaptorGrammar"}, names)
    found += literal_setting_defaults((package / "topics" / "topic_model.py").read_text(encoding="utf8"), {"TopicModel"},
                                      names)
    assert set(found) == API_OWN_DEFAULTS, found
    written = "class M:\n    def fit(self, *, seed: int = 0, passes: int = _RUN.passes):\n        pass\n"
    assert literal_setting_defaults(written, {"M"}, {"seed", "passes"}) == ["M.fit(seed=0)"]


def test_run_keywords_of_the_models_are_the_training_defaults():
    from spacy_ag.model import AdaptorGrammar

    run = {f.name: f.default for f in dataclasses.fields(TrainingSettings)}
    methods = [AdaptorGrammar.fit, AdaptorGrammar.partial_fit, AdaptorGrammar.fit_stream, AdaptorGrammar.online_step,
               TopicModel.fit, TopicModel.fit_gibbs, TopicModel.partial_fit, TopicModel.update_documents,
               TopicModel.step]
    for method in methods:
        for name, param in inspect.signature(method).parameters.items():
            if name in run and param.default is not inspect.Parameter.empty and param.default is not None:
                assert param.default == run[name], (method.__qualname__, name, param.default, run[name])
