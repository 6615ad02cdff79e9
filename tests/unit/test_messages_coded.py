"""Every message spacy-ag raises or warns with comes from the coded table in `spacy_ag/errors.py`.

A message written inline at a `raise` (or in a call that builds an error,
or in `warnings.warn`) has no code, so a user cannot look it up and the
CLI cannot print it as one coded line. The check reads the source with
`ast`: a call that builds an error and passes a string literal, an
f-string or a formatted literal, but no ``Errors.E...`` template, fails.
Locations passed beside a coded template (``SettingError("x.y",
Errors.E443...)``, ``GrammarError(Errors.E300, path)``) are fine.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Iterator, List, Tuple

import spacy_ag
from spacy_ag.errors import Errors

PACKAGE = Path(spacy_ag.__file__).parent

#: Callables whose string arguments are messages: exception classes, `line.error(...)`-style
#: builders and the grammar checks' `_fail`; and `warnings.warn` (see `_callee`).
MESSAGE_TAKER = re.compile(r"(Error|Exception|Warning|^error|^_fail|^warnings\.warn)$")


def _is_inline_text(node: ast.AST) -> bool:
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.BinOp):
        return _is_inline_text(node.left) or _is_inline_text(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _is_inline_text(node.func.value)
    return False


def _uses_table(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "Errors"
               for n in ast.walk(node))


def _callee(call: ast.Call) -> str:
    """The called name; ``warnings.warn`` keeps its module, so that a CLI's ``msg.warn`` (a status
    line, not a warning) is not taken for one."""
    if isinstance(call.func, ast.Name):
        return "warnings.warn" if call.func.id == "warn" else call.func.id
    if isinstance(call.func, ast.Attribute):
        owner = call.func.value
        if call.func.attr == "warn" and isinstance(owner, ast.Name) and owner.id == "warnings":
            return "warnings.warn"
        return call.func.attr
    return ""


def inline_messages(source: str) -> Iterator[Tuple[int, str]]:
    """(line, callee) of every call in `source` that builds a message without the table."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not MESSAGE_TAKER.search(_callee(node)):
            continue
        args = list(node.args) + [k.value for k in node.keywords]
        if any(_is_inline_text(a) for a in args) and not any(_uses_table(a) for a in args):
            yield node.lineno, _callee(node)


def test_the_check_finds_inline_messages():
    source = '''
def f(x, line):
    raise ValueError(f"bad {x}")
def g(x):
    raise ValueError("plain text")
def h(x, line):
    raise line.error("missing arrow")
def k(x):
    warnings.warn("careful " + str(x))
def status(msg):
    msg.warn("nothing shown")
def ok(x, path):
    raise GrammarError(Errors.E300.format(x=x), path)
def ok2(section, key):
    raise SettingError(f"{section}.{key}", Errors.E442)
def ok3(err):
    raise ValueError(str(err))
'''
    assert [line for line, _ in inline_messages(source)] == [3, 5, 7, 9]


def test_every_message_is_in_the_error_table():
    found: List[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py":
            continue
        for line, callee in inline_messages(path.read_text(encoding="utf8")):
            found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {callee}(...) with an inline message")
    assert not found, "messages outside spacy_ag/errors.py:\n" + "\n".join(found)


def test_codes_are_unique_and_well_formed():
    source = (PACKAGE / "errors.py").read_text(encoding="utf8")
    tree = ast.parse(source)
    table = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Errors")
    names = [t.id for n in table.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    assert len(names) == len(set(names)), "a code is defined twice"
    for name in names:
        assert re.fullmatch(r"[EW]\d{3}", name), name
        assert getattr(Errors, name).startswith(f"[{name}] ")
