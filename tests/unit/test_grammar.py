"""Tests of grammar reading, checking and writing (docs/algorithms.md 1.5-1.7, 2.3)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from spacy_ag.settings import DEFAULT_A, DEFAULT_B
from spacy_ag.grammar import (
    CORPUS_CLASS,
    Adaptor,
    Grammar,
    GrammarError,
    Rule,
    corpus_alphabet,
    describe,
    detect_format,
    expand_corpus_class,
    parse_grammar_text,
    read_grammar,
    require_expanded,
    validate,
    write_pycfg,
)

SHARED = Path(__file__).resolve().parents[3] / "shared"
REFERENCE = SHARED / "design" / "reference-grammars"
PYADAGRAM = SHARED / "data" / "brent" / "pyadagram" / "brent-phone"

# docs/algorithms.md 1.7.1: unigram segmentation over a two-letter alphabet.
SMALL = """\
1 1 Sentence --> Words
1 1 Words --> Word
1 1 Words --> Word Words
Word --> Phonemes
1 1 Phonemes --> Phoneme
1 1 Phonemes --> Phoneme Phonemes
1 1 Phoneme --> a
1 1 Phoneme --> b
"""

# docs/algorithms.md 2.3, compact form; adapted = no numbers, unadapted = `1 1`.
COLLOCSYLL_COMPACT = """\
# colloc-syllable grammar of Johnson & Goldwater (2009), compact form
1 1 Sentence --> Colloc3+
Colloc3 --> Colloc2+
Colloc2 --> Colloc1+
Colloc1 --> Word+
Word --> SyllableIF
Word --> SyllableI (Syllable) (Syllable) SyllableF
1 1 Syllable --> (Onset) Rhyme
Onset --> Consonant+
1 1 Rhyme --> Nucleus (Coda)
Nucleus --> Vowel+
Coda --> Consonant+
1 1 SyllableIF --> (OnsetI) RhymeF
OnsetI --> Consonant+
1 1 RhymeF --> Nucleus (CodaF)
CodaF --> Consonant+
1 1 SyllableI --> (OnsetI) Rhyme
1 1 SyllableF --> (Onset) RhymeF
1 1 Consonant --> b
1 1 Consonant --> t
1 1 Vowel --> a
1 1 Vowel --> (
"""

PYADAGRAM_GRAMMAR = """\
% non-terminals
Words -> Word
Words -> Word Words

% adapted non-terminals
@ Word 1500 100 0

Word -> Chars
Chars -> Char
Chars -> Char Chars

% terminals
Char -> "a"
Char -> "("
"""

PYADAGRAM_VOC = """\
% terminals
Char -> "a"
Char -> "b"
Char -> "'"
"""


def write(tmp_path: Path, text: str, name: str = "g.lt") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def read_error(tmp_path: Path, text: str, name: str = "bad.lt", **kwargs) -> str:
    """Read `text` from a file and return the one-line error message."""
    path = write(tmp_path, text, name)
    with pytest.raises(GrammarError) as info:
        read_grammar(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert name in message
    return message


def children_of(grammar: Grammar, parent: str):
    return [rule.children for rule in grammar.rules if rule.parent == parent]


# ------------------------------------------------------------------ py-cfg


def test_small_grammar_meaning():
    grammar = parse_grammar_text(SMALL)
    assert grammar.start == "Sentence"
    assert grammar.nonterminals == ["Sentence", "Words", "Word", "Phonemes", "Phoneme"]
    assert grammar.terminals == ["a", "b"]
    assert grammar.adaptors == {"Word": Adaptor(DEFAULT_A, DEFAULT_B)}  # the one default of spacy_ag.settings
    assert all(rule.weight == 1.0 for rule in grammar.rules)
    assert grammar.rules[3] == Rule("Word", ("Phonemes",), 1.0, 4)


def test_reads_from_file_and_records_path(tmp_path):
    path = write(tmp_path, SMALL)
    for argument in (path, str(path)):
        grammar = read_grammar(argument)
        assert grammar.path == str(path)
        assert grammar.equivalent(parse_grammar_text(SMALL))


def test_missing_file_is_reported(tmp_path):
    with pytest.raises(GrammarError, match="no such grammar file"):
        read_grammar(tmp_path / "nope.lt")


def test_positional_numbers_and_defaults():
    grammar = parse_grammar_text(
        "1 1 S --> Word\n"
        "2 0 100 Word --> P\n"
        "1 1 P --> a\n"  # (w <= 0 is an error: tests/unit/test_grammar_errors.py)
        "3 1 P --> b\n"
        "5 P --> c\n"  # weight only: P stays unadapted from the lines above
        "Q --> a\n1 1 S --> Q\n",
        default_weight=7.0, default_a=0.25, default_b=50.0,
    )
    weights = {(r.parent, r.children): r.weight for r in grammar.rules}
    assert weights[("Word", ("P",))] == 2.0
    assert weights[("P", ("a",))] == 1.0
    assert weights[("P", ("b",))] == 3.0
    assert weights[("P", ("c",))] == 5.0
    assert weights[("Q", ("a",))] == 7.0  # no numbers: the default weight
    assert grammar.adaptors == {"Word": Adaptor(0.0, 100.0), "Q": Adaptor(0.25, 50.0)}


def test_first_child_may_follow_the_arrow():
    grammar = parse_grammar_text("1 1 S --> P\n1 1 P -->d\n1 1 P -->e f\n")
    assert children_of(grammar, "P") == [("d",), ("e", "f")]


def test_a_and_b_belong_to_the_parent_last_recorded_wins():
    grammar = parse_grammar_text(
        "1 1 S --> X\n"
        "1 0.5 20 X --> a\n"
        "1 0.3 X --> b\n"  # records a = 0.3, leaves b = 20
        "X --> c\n"  # omits both: leaves them alone
        "1 0.0001 10000 X --> d\n"  # equal to the defaults: not recorded
    )
    assert grammar.adaptors["X"] == Adaptor(0.3, 20.0)


def test_one_line_with_a_equal_1_makes_the_parent_unadapted():
    grammar = parse_grammar_text("1 1 S --> X\nX --> a\n1 1 X --> b\n")
    assert grammar.adaptors == {}
    grammar = parse_grammar_text("S --> a\n", default_a=1.0)
    assert grammar.adaptors == {}


def test_repeated_rules_add_weights():
    grammar = parse_grammar_text("1 1 S --> a\n2 1 S --> b\n3 1 S --> a\n")
    assert [(r.children, r.weight, r.line) for r in grammar.rules] == [(("a",), 4.0, 1), (("b",), 2.0, 2)]


def test_comments_blank_lines_and_hash_terminals():
    grammar = parse_grammar_text("# a comment\n\n   # indented comment\n1 1 S --> #\n1 1 S --> % *\n")
    assert grammar.terminals == ["#", "%", "*"]
    assert [rule.line for rule in grammar.rules] == [4, 5]


def test_detect_format():
    assert detect_format(SMALL) == "pycfg"
    assert detect_format(PYADAGRAM_GRAMMAR) == "pyadagram"
    assert detect_format("@ Word 1500 100 0\nWord -> Chars\n") == "pyadagram"
    # py-cfg lines whose terminals look like PyAdaGram syntax stay py-cfg
    assert detect_format("1 1 S --> %\n1 1 S --> -> x\n@ S K=3\n") == "pycfg"


# --------------------------------------------------------------- shorthand


def test_plus_creates_one_unadapted_dummy():
    grammar = parse_grammar_text("1 1 S --> X+ X+\n1 1 T --> X+\nX --> a\n1 1 S --> T\n", default_weight=3.0)
    assert children_of(grammar, "X+") == [("X",), ("X", "X+")]
    assert all(rule.weight == 3.0 for rule in grammar.rules if rule.parent == "X+")
    assert not grammar.is_adapted("X+")
    assert grammar.is_adapted("X")


def test_optional_items_expand_to_keep_drop_combinations():
    grammar = parse_grammar_text("1 1 S --> (A) B (C+)\n1 1 A --> a\n1 1 B --> b\n1 1 C --> c\n")
    assert set(children_of(grammar, "S")) == {
        ("A", "B", "C+"), ("A", "B"), ("B", "C+"), ("B",),
    }
    assert children_of(grammar, "C+") == [("C",), ("C", "C+")]


def test_shorthand_only_for_parents_otherwise_literal_terminal():
    grammar = parse_grammar_text("1 1 S --> (\n1 1 S --> )\n1 1 S --> (x) y+ () (S\n")
    assert grammar.terminals == ["(", ")", "(x)", "y+", "()", "(S"]
    assert grammar.nonterminals == ["S"]


def test_all_optional_rule_drops_only_the_empty_expansion():
    grammar = parse_grammar_text("1 1 S --> (A) (B)\n1 1 A --> a\n1 1 B --> b\n")
    assert set(children_of(grammar, "S")) == {("A", "B"), ("A",), ("B",)}


def test_user_parent_ending_in_plus_is_rejected(tmp_path):
    message = read_error(tmp_path, "1 1 S --> X\n1 1 X --> a\n1 1 X+ --> b\n")
    assert ":3:" in message and "reserved" in message and "rename X+" in message


def test_collocsyll_compact_expands_to_the_explicit_grammar():
    grammar = parse_grammar_text(COLLOCSYLL_COMPACT)
    word = children_of(grammar, "Word")
    assert sorted(word, key=len) == [
        ("SyllableIF",),
        ("SyllableI", "SyllableF"),
        ("SyllableI", "Syllable", "SyllableF"),
        ("SyllableI", "Syllable", "Syllable", "SyllableF"),
    ]
    middle = [r for r in grammar.rules if r.children == ("SyllableI", "Syllable", "SyllableF")]
    assert len(middle) == 1 and middle[0].weight == 1.0  # deduplicated, not summed
    assert set(children_of(grammar, "Syllable")) == {("Onset", "Rhyme"), ("Rhyme",)}
    assert set(children_of(grammar, "RhymeF")) == {("Nucleus", "CodaF"), ("Nucleus",)}
    assert children_of(grammar, "Colloc3+") == [("Colloc3",), ("Colloc3", "Colloc3+")]
    assert children_of(grammar, "Consonant+") == [("Consonant",), ("Consonant", "Consonant+")]
    assert set(grammar.adaptors) == {"Colloc3", "Colloc2", "Colloc1", "Word", "Onset", "OnsetI",
                                     "Coda", "CodaF", "Nucleus"}
    assert "(" in grammar.terminals  # Brent's vowel `(`, not shorthand


@pytest.mark.skipif(not (REFERENCE / "collocsyll.lt").exists(), reason="shared reference grammars absent")
def test_collocsyll_compact_matches_reference_up_to_dummy_names():
    reference = read_grammar(REFERENCE / "collocsyll.lt")
    compact = parse_grammar_text(COLLOCSYLL_COMPACT)
    rename = {"Colloc3+": "Sentence", "Colloc2+": "Colloc2s", "Colloc1+": "Colloc1s", "Word+": "Words",
              "Consonant+": "Consonants", "Vowel+": "Vowels"}

    def shape(grammar, drop_lexical):
        rules = set()
        for rule in grammar.rules:
            if drop_lexical and rule.parent in ("Consonant", "Vowel"):
                continue
            parent = rename.get(rule.parent, rule.parent)
            rules.add((parent, tuple(rename.get(c, c) for c in rule.children)))
        return rules

    # The reference writes Sentence --> Colloc3 | Colloc3 Sentence; the compact form
    # has Sentence --> Colloc3+ as an extra unary step.
    compact_rules = shape(compact, True) - {("Sentence", ("Sentence",))}
    assert compact_rules == shape(reference, True)
    assert set(compact.adaptors) == set(reference.adaptors)


# -------------------------------------------------------------- directives


def test_directives_set_options_and_override_a_b():
    grammar = parse_grammar_text("1 1 S --> W\n1 0.5 20 W --> a\n@ W K=1500 b=7\n@ W a=0\n")
    assert grammar.adaptors["W"] == Adaptor(0.0, 7.0, {"K": 1500.0})


@pytest.mark.parametrize(
    "line, words",
    [
        ("@ Nope K=3", ["unknown symbol", "Nope"]),
        ("@ S K=3", ["not adapted", "S"]),
        ("@ W K", ["key=value"]),
        ("@ W", ["sets nothing"]),
        ("@ K=3", ["without a nonterminal"]),
        ("@ W K=x", ["not a number"]),
        ("@ W a=1", ["a = 1"]),
        ("@ W b=0", ["b = 0", "> 0"]),
    ],
)
def test_directive_errors(tmp_path, line, words):
    message = read_error(tmp_path, f"1 1 S --> W\nW --> a\n{line}\n")
    assert ":3:" in message
    for word in words:
        assert word in message


# ----------------------------------------------------------- corpus class


CLASS_GRAMMAR = f"1 1 Words --> Word\n1 1 Words --> Word Words\nWord --> Chars\n" \
                f"1 1 Chars --> Char\n1 1 Chars --> Char Chars\n2 1 Char --> {CORPUS_CLASS}\n1 1 Char --> a\n"


def test_corpus_class_is_kept_without_alphabet_and_blocks_training():
    grammar = parse_grammar_text(CLASS_GRAMMAR, source="class.lt")
    assert children_of(grammar, "Char") == [(CORPUS_CLASS,), ("a",)]
    assert describe(grammar)["corpus_class"] is True
    with pytest.raises(GrammarError) as info:
        require_expanded(grammar)
    assert "class.lt:6:" in str(info.value) and "corpus" in str(info.value)
    validate(grammar, ["any thing ☃"])  # the class covers every character


def test_corpus_class_expansion():
    alphabet = corpus_alphabet(["b a c", "cab"])
    assert alphabet == ["a", "b", "c"]
    grammar = parse_grammar_text(CLASS_GRAMMAR, alphabet={"c", "b", "a"})
    chars = [(r.children[0], r.weight, r.line) for r in grammar.rules if r.parent == "Char"]
    assert chars == [("a", 3.0, 6), ("b", 2.0, 6), ("c", 2.0, 6)]  # explicit `a` adds its weight
    assert require_expanded(grammar) is grammar
    later = expand_corpus_class(parse_grammar_text(CLASS_GRAMMAR), alphabet)
    assert later.equivalent(grammar)


def test_corpus_class_errors(tmp_path):
    message = read_error(tmp_path, f"1 1 S --> C\n1 1 C --> x {CORPUS_CLASS}\n")
    assert ":2:" in message and "whole right-hand side" in message
    with pytest.raises(GrammarError, match="also a nonterminal"):
        parse_grammar_text(f"1 1 S --> C\n1 1 C --> {CORPUS_CLASS}\n", alphabet=["S", "x"])


# -------------------------------------------------------------- PyAdaGram


def test_pyadagram_grammar_with_vocabulary_file(tmp_path):
    grammar_path = write(tmp_path, PYADAGRAM_GRAMMAR, "grammar.unigram")
    voc_path = write(tmp_path, PYADAGRAM_VOC, "voc.dat")
    grammar = read_grammar(grammar_path, extra_rule_files=[voc_path])
    assert grammar.start == "Words"
    assert grammar.adaptors == {"Word": Adaptor(0.0, 100.0, {"K": 1500.0})}
    chars = [r for r in grammar.rules if r.parent == "Char"]
    assert [r.children[0] for r in chars] == ["a", "(", "b", "'"]  # duplicate "a" kept once
    assert all(r.weight == pytest.approx(0.25) for r in chars)  # PyAdaGram: 1/|R_A|
    assert all(r.weight == 0.5 for r in grammar.rules if r.parent == "Words")
    assert grammar.rules[-1].source == str(voc_path) and grammar.rules[-1].line == 4
    assert grammar.rules[0].source is None


def test_errors_in_a_vocabulary_file_name_that_file(tmp_path):
    grammar_path = write(tmp_path, PYADAGRAM_GRAMMAR, "grammar.unigram")
    voc_path = write(tmp_path, PYADAGRAM_VOC + 'Other -> "z"\n', "voc.dat")
    with pytest.raises(GrammarError) as info:
        read_grammar(grammar_path, extra_rule_files=[voc_path])
    assert str(info.value).split("] ", 1)[-1].startswith(f"{voc_path}:5:") and "Other" in str(info.value)
    write(tmp_path, PYADAGRAM_VOC + "Char -> y\n", "voc.dat")
    with pytest.raises(GrammarError, match=r"voc\.dat:5: unknown symbol 'y'"):
        read_grammar(grammar_path, extra_rule_files=[voc_path])


def test_pyadagram_alternatives_and_explicit_format():
    grammar = parse_grammar_text('S -> A | A S\nA -> "x" | "y"\n', fmt="pyadagram")
    assert children_of(grammar, "S") == [("A",), ("A", "S")]
    assert grammar.terminals == ["x", "y"] and grammar.adaptors == {}


@pytest.mark.parametrize(
    "text, line, words",
    [
        ('S -> A\nA -> Char\n', 2, ["unknown symbol", "Char", "quote"]),
        ('S -> "a"\n@ Nope 10 1 0\n', 2, ["unknown symbol", "Nope"]),
        ('S -> "a"\n@ S 10 1\n', 2, ["@ Nonterminal K concentration discount"]),
        ('S -> "a"\n@ S 10 0 0\n', 2, ["concentration", "> 0"]),
        ('% x\nS -> "a\n', 2, ["unterminated quote"]),
        ('% x\nS -> "S"\n', 2, ["name of a nonterminal"]),
        ('% x\nS "a"\n', 2, ["Parent -> children"]),
        ('% x\nS -> A |\nA -> "a"\n', 2, ["empty right-hand side"]),
    ],
)
def test_pyadagram_errors(tmp_path, text, line, words):
    message = read_error(tmp_path, text, "grammar.pya")
    assert f":{line}:" in message
    for word in words:
        assert word in message


@pytest.mark.skipif(not (PYADAGRAM / "grammar.collocation").exists(), reason="shared PyAdaGram data absent")
def test_real_pyadagram_collocation_grammar():
    grammar = read_grammar(PYADAGRAM / "grammar.collocation", extra_rule_files=[PYADAGRAM / "voc.dat"])
    assert grammar.start == "Sentence"
    assert grammar.adaptors["Collocation"] == Adaptor(0.0, 500.0, {"K": 7500.0})
    assert grammar.adaptors["Word"] == Adaptor(0.0, 100.0, {"K": 1500.0})
    chars = children_of(grammar, "Char")
    assert len(chars) == len(set(chars))


# ----------------------------------------------------------- file errors


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("1 1 S --> a\n1 x Word --> a\n", 2, ["discount a", "'x'", "not a number"]),
        ("1 1 S --> a\n1 1 1 1 A --> b\n", 2, ["too many numbers", "at most three"]),
        ("1 1 S --> a\nnan 1 A --> b\n", 2, ["finite", "nan"]),
        ("1 1 S --> a\n1 1.5 A --> b\n", 2, ["discount a = 1.5", "[0, 1]"]),
        ("1 1 S --> a\n1 0.5 0 A --> b\n", 2, ["concentration b = 0.0", "> 0"]),
        ("1 1 S --> a\n1 1 A b\n", 2, ["missing '-->'"]),
        ("1 1 S --> a\n1 1 A-->b\n", 2, ["missing '-->'", "space"]),
        ("1 1 S --> a\nA -> b\n1 1 S --> A\n", 2, ["-->, not ->"]),
        ("1 1 S --> a\n1 1 A -->\n", 2, ["empty right-hand side", "A -->"]),
        ("1 1 --> a\n", 1, ["missing parent"]),
    ],
)
def test_line_errors(tmp_path, text, line, words):
    message = read_error(tmp_path, text, fmt="pycfg")
    assert f"bad.lt:{line}:" in message
    for word in words:
        assert word in message


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_empty_grammar(tmp_path, text):
    message = read_error(tmp_path, text, "empty.lt")
    assert "no rules" in message


def test_unknown_start_symbol(tmp_path):
    message = read_error(tmp_path, "1 1 S --> a\n", start="Sentence")
    assert "unknown symbol" in message and "'Sentence'" in message and "S" in message


def test_unreachable_nonterminal(tmp_path):
    message = read_error(tmp_path, "1 1 S --> A\n1 1 A --> a\n1 1 Lost --> b\n")
    assert "bad.lt:3:" in message and "Lost" in message and "not reachable" in message and "S" in message


def test_nonterminal_without_terminal_yield(tmp_path):
    message = read_error(tmp_path, "1 1 S --> a\n1 1 S --> Loop\n1 1 Loop --> x Loop\n")
    assert "bad.lt:3:" in message and "Loop" in message and "derives no terminal string" in message


def test_recursive_adapted_nonterminal_names_the_cycle(tmp_path):
    message = read_error(tmp_path, "1 1 S --> Word\nWord --> Chars\n1 1 Chars --> a\n1 1 Chars --> a Word\n")
    assert "bad.lt:2:" in message and "Word -> Chars -> Word" in message and "recursive" in message


def test_recursion_through_unadapted_symbols_is_fine():
    grammar = parse_grammar_text(SMALL)
    assert grammar.rules_of("Words")[1].children == ("Word", "Words")


def test_unary_cycle(tmp_path):
    message = read_error(tmp_path, "1 1 S --> A\n1 1 A --> B\n1 1 B --> A\n1 1 B --> b\n")
    assert "bad.lt:2:" in message and "A -> B -> A" in message and "unary" in message
    assert "lines 2, 3" in message


def test_programmatic_grammar_is_checked_too():
    grammar = Grammar("S", [Rule("S", ("a",), -1.0)], {})
    with pytest.raises(GrammarError, match="positive"):
        validate(grammar)
    with pytest.raises(GrammarError, match="unknown symbol"):
        validate(Grammar("S", [Rule("S", ("a",))], {"X": Adaptor(0.0, 1.0)}))


# --------------------------------------------------------------- coverage


def test_corpus_character_without_rule(tmp_path):
    grammar = read_grammar(write(tmp_path, SMALL, "uni.lt"))
    validate(grammar, ["ab ba", "aab"])
    with pytest.raises(GrammarError) as info:
        validate(grammar, ["ab ba", "", "abé"], corpus_path="train.txt")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("[E342] train.txt:3:")
    for word in ["'é'", "U+00E9", "uni.lt", "Phoneme --> é", CORPUS_CLASS]:
        assert word in message


def test_corpus_read_from_path_and_tokens_mode(tmp_path):
    grammar = parse_grammar_text("1 1 S --> W\n1 1 S --> W S\n1 1 W --> the\n1 1 W --> dog\n")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the dog\nthe cat\n", encoding="utf-8")
    with pytest.raises(GrammarError) as info:
        validate(grammar, corpus_path=str(corpus), mode="tokens")
    assert f"{corpus}:2:" in str(info.value) and "token 'cat'" in str(info.value)
    with pytest.raises(ValueError):
        validate(grammar, ["x"], mode="words")


# ------------------------------------------------------------------ writer


def test_write_and_read_back_gives_an_equal_grammar():
    grammar = parse_grammar_text(COLLOCSYLL_COMPACT + "2.5 0.2 30 Onset --> t\n@ Word K=10\n")
    text = write_pycfg(grammar)
    assert "#" not in text.replace("--> #", "") and "@" not in text and "(Onset)" not in text
    for defaults in ({}, {"default_a": 0.0, "default_b": 5.0}, {"default_a": 1.0}):
        again = parse_grammar_text(text, **defaults)
        assert again.start == grammar.start
        assert again.adaptors["Onset"] == Adaptor(0.2, 30.0)
        assert set(again.adaptors) == set(grammar.adaptors)
        assert again.equivalent(Grammar(grammar.start, grammar.rules,
                                        {k: Adaptor(v.a, v.b) for k, v in grammar.adaptors.items()}))
    with_options = parse_grammar_text(write_pycfg(grammar, include_options=True))
    assert with_options.equivalent(grammar)


def test_writer_puts_start_rules_first_and_formats_numbers():
    grammar = Grammar("S", [Rule("X", ("a",), 0.5), Rule("S", ("X",), 2.0)], {"X": Adaptor(0.0, 100.0)})
    assert write_pycfg(grammar) == "2 1 S --> X\n0.5 0 100 X --> a\n"
    assert parse_grammar_text(write_pycfg(grammar)).equivalent(grammar)


def test_writer_refuses_unwritable_symbols():
    with pytest.raises(GrammarError, match="number"):
        write_pycfg(Grammar("1", [Rule("1", ("a",))], {}))
    with pytest.raises(GrammarError, match="whitespace"):
        write_pycfg(Grammar("S", [Rule("S", ("a b",))], {}))


# --------------------------------------------------------- reference files


@pytest.mark.skipif(not (REFERENCE / "unigram.lt").exists(), reason="shared reference grammars absent")
def test_reference_unigram_grammar():
    grammar = read_grammar(REFERENCE / "unigram.lt")
    assert grammar.start == "Sentence"
    assert grammar.adaptors == {"Word": Adaptor(DEFAULT_A, DEFAULT_B)}
    assert len(grammar.rules_of("Phoneme")) == 50
    summary = describe(grammar)
    assert summary["terminals"] == 50 and summary["rules_per_parent"]["Phoneme"] == 50
    assert summary["adapted"] == {"Word": {"a": DEFAULT_A, "b": DEFAULT_B}}
    assert parse_grammar_text(write_pycfg(grammar)).equivalent(grammar)


def test_describe_summary():
    summary = describe(parse_grammar_text("1 1 S --> W\n1 0 5 W --> a b\n@ W K=3\n"))
    assert summary == {
        "path": "<string>",
        "start": "S",
        "nonterminals": ["S", "W"],
        "adapted": {"W": {"a": 0.0, "b": 5.0, "K": 3.0}},
        "terminals": 2,
        "corpus_class": False,
        "rules": 2,
        "rules_per_parent": {"S": 1, "W": 1},
    }


def test_question_mark_and_star_shorthand():
    g = parse_grammar_text(
        "1 1 Word --> Onset? Rhyme Coda*\n"
        "1 1 Onset --> b\n1 1 Rhyme --> a\n1 1 Coda --> k\n"
        "1 1 Coda --> *\n",  # a literal terminal '*' stays a terminal
        fmt="pycfg",
    )
    word_rules = {r.children for r in g.rules if r.parent == "Word"}
    assert word_rules == {("Onset", "Rhyme", "Coda+"), ("Rhyme", "Coda+"), ("Onset", "Rhyme"), ("Rhyme",)}
    assert {r.children for r in g.rules if r.parent == "Coda+"} == {("Coda",), ("Coda", "Coda+")}
    assert ("*",) in {r.children for r in g.rules if r.parent == "Coda"}
