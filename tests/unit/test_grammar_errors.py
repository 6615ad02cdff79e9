"""The grammar reader names the mistake itself, in one line `file:line[:col]: problem; fix`.

Non-positive or non-finite weights, a and b out of range, unclosed or unknown
character classes (with their column) and right-hand-side symbols that
misspell a nonterminal (`did you mean "Phoneme"?`, at the misspelling's line).
"""
from __future__ import annotations

import re
from pathlib import Path


import pytest
from typer.testing import CliRunner

from spacy_ag.cli import app
from spacy_ag.errors import SpacyAgError
from spacy_ag.grammar import CORPUS_CLASS, GrammarError, parse_grammar_text, read_grammar
from conftest import assert_one_error_line

REPO = Path(__file__).resolve().parents[2]


def error_of(text: str, **kwargs) -> GrammarError:
    with pytest.raises(GrammarError) as info:
        parse_grammar_text(text, source="g.lt", **kwargs)
    error = info.value
    assert "\n" not in str(error)
    assert isinstance(error, SpacyAgError) and is_grammar_code(error.code)
    assert str(error).startswith(f"[{error.code}] ")
    return error


def is_grammar_code(code: str) -> bool:
    """E100, the grammar errors' class code, or one of the grammar file messages (E300-E379)."""
    return code == "E100" or 300 <= int(code[1:]) <= 379


def without_code(error) -> str:
    """The message after its code: file, line (column), problem, fix."""
    return str(error).split("] ", 1)[1] if str(error).startswith("[E") else str(error)


def message_of(text: str, **kwargs) -> str:
    return without_code(error_of(text, **kwargs))


# ------------------------------------------------------------------ weights

WEIGHT_FIX = ("; write a positive weight such as 1 (py-cfg silently reads w <= 0 as the default weight; "
              "the numbers are w a b, so `1 0 P --> ...` is weight 1 with discount a = 0)")


@pytest.mark.parametrize("weight", ["0", "-3", "-0", "0.0", "1e-400"])
def test_non_positive_weight_is_an_error(weight):
    message = message_of(f"1 1 S --> P\n{weight} 1 P --> b\n")
    assert message == f"g.lt:2: weight w = {weight} of P must be > 0" + WEIGHT_FIX


@pytest.mark.parametrize("weight", ["nan", "inf", "-inf", "NaN", "Infinity"])
def test_non_finite_weight_is_an_error(weight):
    message = message_of(f"1 1 S --> P\n{weight} 1 P --> b\n")
    assert message == f"g.lt:2: weight w = {weight} of P must be a finite number > 0; write a positive weight such as 1"


def test_weight_zero_alone_does_not_make_the_parent_adapted():
    """`0 Phoneme --> a`: the 0 is the weight (a parent never looks like a
    number); py-cfg would take the default weight and, a being unset, adapt
    Phoneme. Here the line is an error."""
    error = error_of("1 1 Sentence --> Word+\nWord --> Phoneme+\n0 Phoneme --> a\n")
    assert without_code(error) == (
        "g.lt:3: weight w = 0 of Phoneme must be > 0; write a positive weight such as 1 (py-cfg silently reads "
        "w <= 0 as the default weight; the numbers are w a b, so `1 0 Phoneme --> ...` is weight 1 with "
        "discount a = 0)"
    )
    assert (error.path, error.line, error.column) == ("g.lt", 3, None)


def test_weight_that_is_not_a_number():
    assert message_of("1 1 S --> P\nx 1 P --> b\n") == "g.lt:2: weight w 'x' is not a number"


def test_positive_weights_and_numbers_as_terminals_are_fine():
    grammar = parse_grammar_text("1 1 S --> 0\n0.5 1 S --> P\n2 1 P --> -1\n")
    assert [rule.weight for rule in grammar.rules] == [1.0, 0.5, 2.0]
    assert grammar.terminals == ["0", "-1"]
    # without a weight the default applies, as before
    grammar = parse_grammar_text("1 1 S --> P\nP --> a\n", default_weight=3.0)
    assert grammar.rules[1].weight == 3.0


@pytest.mark.parametrize(
    "numbers, expected",
    [
        ("1 1.5", "discount a = 1.5 is outside [0, 1]; 0 gives a Dirichlet process"),
        ("1 -0.1", "discount a = -0.1 is outside [0, 1]; 0 gives a Dirichlet process"),
        ("1 nan", "discount a must be a finite number, got 'nan'"),
        ("1 0.5 0", "concentration b = 0.0 must be > 0 (e.g. 1000)"),
        ("1 0.5 -2", "concentration b = -2.0 must be > 0 (e.g. 1000)"),
        ("1 0.5 inf", "concentration b must be a finite number, got 'inf'"),
    ],
)
def test_discount_and_concentration_out_of_range(numbers, expected):
    assert message_of(f"1 1 S --> P\n{numbers} P --> b\n") == f"g.lt:2: {expected}"


def test_directive_a_and_b_out_of_range():
    assert message_of("1 1 S --> W\nW --> a\n@ W a=-1\n") == (
        "g.lt:3: discount a = -1.0 is outside [0, 1) (a = 1 means unadapted); 0 gives a Dirichlet process"
    )
    assert message_of("1 1 S --> W\nW --> a\n@ W b=-5\n") == "g.lt:3: concentration b = -5.0 must be > 0 (e.g. 1000)"


# ---------------------------------------------------------- character class


@pytest.mark.parametrize(
    "rhs, column, expected",
    [
        ("[:corpus:", 11, "unclosed character class '[:corpus:'; write [:corpus:]"),
        ("[:corpus", 11, "unclosed character class '[:corpus'; write [:corpus:]"),
        ("[:digit:", 11, "unclosed character class '[:digit:'; the only class is [:corpus:] "
                         "(every character of the corpus)"),
        ("[abc", 11, "unclosed character class '[abc'; the only class is [:corpus:] (every character of the "
                     "corpus), and a terminal [ must stand alone"),
        ("x y [:corpus:", 15, "unclosed character class '[:corpus:'; write [:corpus:]"),
        ("[:corpsu:]", 11, "unknown character class '[:corpsu:]'; did you mean \"[:corpus:]\"? "
                           "(every character of the corpus)"),
        ("[:digit:]", 11, "unknown character class '[:digit:]'; the only class is [:corpus:] "
                          "(every character of the corpus)"),
        ("[:corpus:]+", 11, "malformed character class '[:corpus:]+'; write [:corpus:] as a token of its own"),
    ],
)
def test_bad_character_class_is_a_syntax_error_at_its_column(rhs, column, expected):
    error = error_of(f"1 1 S --> C\n1 1 C --> {rhs}\n")
    assert without_code(error) == f"g.lt:2:{column}: {expected}"
    assert (error.line, error.column) == (2, column)


def test_class_column_counts_leading_space_and_a_glued_arrow():
    expected = "unclosed character class '[:corpus:'; write [:corpus:]"
    assert message_of(f"1 1 S --> C\n\t  1 1 C -->[:corpus:\n") == f"g.lt:2:13: {expected}"
    assert message_of(f"1 1 S --> C\n1 1 C   -->   a   [:corpus:\n") == f"g.lt:2:19: {expected}"


def test_unclosed_class_in_a_file_names_file_line_and_column(tmp_path):
    path = tmp_path / "chars.lt"
    path.write_text("# characters\n1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:\n",
                    encoding="utf-8")
    with pytest.raises(GrammarError) as info:
        read_grammar(path)
    assert without_code(info.value) == f"{path}:4:14: unclosed character class '[:corpus:'; write [:corpus:]"


def test_pyadagram_unclosed_class():
    message = message_of('% x\nS -> W\nW -> [:corpus:\n')
    assert message == "g.lt:3:6: unclosed character class '[:corpus:'; write [:corpus:]"


def test_bracket_terminals_stay_terminals():
    """Brent has the phoneme `[`; closed tokens other than `[:name:]` are terminals too."""
    grammar = parse_grammar_text(f"1 1 S --> C\n1 1 C --> [\n1 1 C --> [x]\n1 1 C --> {CORPUS_CLASS}\n")
    assert grammar.terminals == ["[", "[x]", CORPUS_CLASS]
    grammar = parse_grammar_text('% x\nS -> C\nC -> "["\nC -> "[abc"\n')
    assert grammar.terminals == ["[", "[abc"]


# ------------------------------------------------------- misspelt symbols


def test_misspelt_plus_symbol_is_named_at_its_line():
    """`Phonem+`: before, a terminal and then `Phoneme is not reachable` at Phoneme's line."""
    error = error_of("1 1 Sentence --> Word+\nWord --> Phonem+\n1 1 Phoneme --> a\n1 1 Phoneme --> b\n")
    assert without_code(error) == (
        "g.lt:2: unknown symbol 'Phonem+': no rule has Phonem as parent, so Phonem+ is a terminal one edit "
        "away from the nonterminal Phoneme; did you mean \"Phoneme\"? (write Phoneme+; to keep Phonem+ as a "
        "terminal, rename the nonterminal Phoneme)"
    )
    assert error.line == 2


@pytest.mark.parametrize(
    "rhs, core, fixed",
    [
        ("Phonme", "Phonme", None),  # swapped letters
        ("Phonemes", "Phonemes", None),  # one letter too many
        ("PhonemeX", "PhonemeX", None),
        ("(Phonem)", "Phonem", "(Phoneme)"),
        ("(Phonem+)", "Phonem", "(Phoneme+)"),
        ("Phonem?", "Phonem", "Phoneme?"),
        ("Phonem*", "Phonem", "Phoneme*"),
    ],
)
def test_misspelt_symbol_even_when_the_nonterminal_is_used(rhs, core, fixed):
    message = message_of(f"1 1 Sentence --> Word+\nWord --> Phoneme {rhs}\n1 1 Phoneme --> a\n")
    what = "it" if core == rhs else core
    subject = "it" if core == rhs else rhs
    write = f"write {fixed}; " if fixed else ""
    assert message == (
        f"g.lt:2: unknown symbol {rhs!r}: no rule has {what} as parent, so {subject} is a terminal one edit "
        f"away from the nonterminal Phoneme; did you mean \"Phoneme\"? ({write}to keep {rhs} as a terminal, "
        f"rename the nonterminal Phoneme)"
    )


def test_misspelling_behind_an_unreachable_nonterminal():
    """Two edits (`Phonm+`) or lowercase (`phoneme+`) are not flagged on their own,
    but when they leave Phoneme unreachable the error names the misspelling."""
    for typo in ("Phonm", "phoneme"):
        error = error_of(f"1 1 Sentence --> Word+\nWord --> {typo}+\n1 1 Phoneme --> a\n")
        assert without_code(error) == (
            f"g.lt:2: unknown symbol '{typo}+': no rule has {typo} as parent, so {typo}+ is a terminal, and "
            f"nonterminal Phoneme (line 3) is not reachable from the start symbol Sentence; "
            f"did you mean \"Phoneme\"? (write Phoneme+)"
        )
        assert error.line == 2


def test_unreachable_without_a_close_terminal_keeps_its_message():
    message = message_of("1 1 S --> A\n1 1 A --> a\n1 1 Lost --> b\n")
    assert message == ("g.lt:3: nonterminal Lost is not reachable from the start symbol S; "
                       "use it on a right-hand side or delete its rules")


def test_terminals_that_are_not_typos_are_left_alone():
    # lowercase words and short symbols close to a nonterminal that is in use
    grammar = parse_grammar_text("1 1 Sentence --> Word+\nWord --> phonem word Phoneme\n1 1 Phoneme --> a\n")
    assert grammar.terminals == ["phonem", "word", "a"]
    # Brent's one-letter phonemes next to one-letter nonterminals
    grammar = parse_grammar_text("1 1 S --> T\n1 1 T --> D S\n1 1 T --> D\n1 1 T --> Sx Tt\n")
    assert grammar.terminals == ["D", "Sx", "Tt"]
    # two edits away from a nonterminal that is reachable
    grammar = parse_grammar_text("1 1 Sentence --> Word+\nWord --> Phnm Phoneme\n1 1 Phoneme --> a\n")
    assert grammar.terminals == ["Phnm", "a"]
    # shorthand of real nonterminals is not a typo
    grammar = parse_grammar_text("1 1 S --> (A) B* C? (D+)\n1 1 A --> a\n1 1 B --> b\n1 1 C --> c\n1 1 D --> d\n")
    assert grammar.terminals == ["a", "b", "c", "d"]


@pytest.mark.parametrize("path", sorted((REPO / "configs" / "grammars").glob("*.lt")), ids=lambda p: p.name)
def test_shipped_grammars_still_read(path):
    read_grammar(path)


def test_did_you_mean_in_directives_start_symbol_and_pyadagram():
    assert message_of("1 1 S --> Word\nWord --> a\n@ Wrod K=3\n") == (
        "g.lt:3: unknown symbol 'Wrod' in adaptor directive; it must name a nonterminal that has rules "
        "(did you mean \"Word\"?)"
    )
    assert message_of("1 1 Sentence --> a\n", start="Sentense") == (
        "g.lt: unknown symbol: the start symbol 'Sentense' has no rules; did you mean \"Sentence\"? "
        "Or use one of Sentence or add rules for it"
    )
    assert message_of('% x\nS -> Wrd\nWord -> "a"\n') == (
        "g.lt:2: unknown symbol 'Wrd': it is never a parent; did you mean \"Word\"? Otherwise quote it if it "
        "is a terminal (\"Wrd\") or add rules for it"
    )
    assert message_of('% x\nS -> Word\nWord -> "a"\n@ Wrod 10 1 0\n') == (
        "g.lt:4: unknown symbol 'Wrod' in adaptor line; it must name a nonterminal that has rules "
        "(did you mean \"Word\"?)"
    )
    # a quoted PyAdaGram terminal that leaves Word unreachable
    assert message_of('% x\nS -> "Wrd"\nS -> "b"\nWord -> "a"\n') == (
        "g.lt:2: unknown symbol 'Wrd': no rule has it as parent, so it is a terminal, and nonterminal Word "
        "(line 4) is not reachable from the start symbol S; did you mean \"Word\"?"
    )


# ---------------------------------------------------------------------- CLI


def test_check_grammar_reports_the_mistake(tmp_path):
    runner = CliRunner()
    cases = {
        "weight.lt": ("1 1 Sentence --> Word+\nWord --> Phoneme+\n0 Phoneme --> a\n",
                      [":3: weight w = 0 of Phoneme must be > 0"]),
        "class.lt": ("1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:\n",
                     [":3:14: unclosed character class '[:corpus:'; write [:corpus:]"]),
        "typo.lt": ("1 1 Sentence --> Word+\nWord --> Phonem+\n1 1 Phoneme --> a\n",
                    [":2: unknown symbol 'Phonem+'", 'did you mean "Phoneme"?']),
    }
    for name, (text, fragments) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        result = runner.invoke(app, ["check-grammar", str(path)])
        line = assert_one_error_line(result, str(path), *fragments)
        assert re.search(r"\[(E\d{3})\]", line) and is_grammar_code(re.search(r"\[(E\d{3})\]", line).group(1))
