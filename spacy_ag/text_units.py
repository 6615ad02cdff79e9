"""Text units: what one terminal is when text is read character by character.

A "character" the user sees is often more than one code point: a letter with
combining accents (Vietnamese ``ế`` written as ``e`` + U+0302 + U+0301), a
Devanagari consonant with its vowel sign (``हि``), a Thai consonant with a
tone mark and SARA AM (``น้ำ``), an emoji with a skin tone or a ZWJ family
(``👨‍👩‍👧``, five code points), a flag (two regional indicators). Cutting such
a sequence into separate terminals lets a segmenter put a word boundary
inside a letter, so by default the terminals of ``mode = "chars"`` are
**extended grapheme clusters** (Unicode UAX #29), computed here from the rules
of the standard and the categories of `unicodedata`; ``units = "codepoints"``
keeps one code point per terminal (the behaviour before, and the right unit
for phoneme transcriptions, whose letters are ASCII anyway: on ASCII text the
two units coincide).

``units = "alnum-runs"`` is for scripts written without spaces that embed
numbers and Latin words (Chinese, Japanese): graphemes, except that a maximal
run of digits and Latin letters, half- or full-width, is one unit, with the
decimal point, comma, colon or slash between two digits and a percent sign
after one (``２００１``, ``1.3``, ``３／４``, ``９０％``, ``WTO``, ``AM21B``).
Segmentation standards never cut inside a number or a Latin word, and as a
unit of its own a number is one terminal instead of a string of digits the
grammar would have to learn to keep together (`alnum_runs`). Never use it for
phoneme strings written in Latin letters: a whole utterance would be one unit.

`graphemes` implements every rule of UAX #29 (as of Unicode 15.1/16.0):
GB3-GB5 (CR LF; controls break on both sides), GB6-GB8 (Hangul L/V/T/LV/LVT
syllable sequences, computed from the code points), GB9 (Extend: Mn, Me,
Other_Grapheme_Extend, the emoji modifiers U+1F3FB..1F3FF, so also the
variation selectors; and ZWJ), GB9a (SpacingMark: Mc minus the standard's
exceptions, plus Thai SARA AM and Lao AM), GB9b (Prepend: the standard's short
list), GB9c (Indic conjuncts: consonant + virama + consonant stay together in
Devanagari, Bengali, Gujarati, Oriya, Telugu and Malayalam, so ``क्ष`` is one
unit; Indic_Conjunct_Break=Extend is Extend and ZWJ without ZWNJ, as in
Unicode 16), GB11 (emoji ZWJ sequences, with Extended_Pictographic as the
code-point ranges of emoji-data.txt) and GB12/GB13 (regional-indicator
pairs: flags). The property tables other than the general categories are
written out below; characters newer than the `unicodedata` of the running
Python are unassigned to it and break like letters.

Two more decisions make clusters usable as terminals (`text_units`):

* Whitespace is never part of a unit. UAX #29 attaches a combining mark that
  follows a space to the space (``" \\u0301"`` is one cluster); here every
  whitespace code point is a unit of its own and the marks after it form a
  unit, so whitespace stays a boundary and no terminal contains a space.
* Control characters (category Cc that are not whitespace: NUL, ESC, DEL,
  C1 controls) are **hard boundaries**: always a unit of their own (UAX #29
  says so too), never a terminal of the training text (`read_corpus` cuts
  there), and a word of their own when text is segmented, so the text is
  still spelled back exactly.
* A lone surrogate (U+D800..U+DFFF on its own, what ``errors="surrogateescape"``
  decoding leaves for a bad byte) is not text: `check_text` raises a one-line
  `TextError` [E110] naming where, instead of a UnicodeEncodeError deep inside
  spaCy or numpy.
"""
from __future__ import annotations

import bisect
import re
import unicodedata
from typing import Dict, List, Optional, Sequence, Tuple

from .errors import Errors, TextError
from .settings import UNIT_CHOICES

__all__ = [
    "DEFAULT_UNITS",
    "LEGACY_UNITS",
    "UNITS",
    "alnum_runs",
    "check_text",
    "check_units",
    "graphemes",
    "is_control",
    "is_hard_boundary",
    "terminals",
    "terminal_spans",
    "text_units",
]

#: The text units of ``mode = "chars"`` (the choices of the ``units`` setting).
UNITS = UNIT_CHOICES
DEFAULT_UNITS = UNITS[0]
#: What a model archive written before the setting existed was trained on.
LEGACY_UNITS = "codepoints"

# Grapheme_Cluster_Break values (UAX #29, Table 2)
OTHER, CR, LF, CONTROL, EXTEND, ZWJ, RI, PREPEND, SPACING_MARK, L, V, T, LV, LVT = range(14)
# Indic_Conjunct_Break values (GB9c)
INCB_NONE, INCB_CONSONANT, INCB_LINKER, INCB_EXTEND = range(4)

Ranges = Sequence[Tuple[int, int]]


def _table(ranges: Ranges) -> Tuple[List[int], List[int]]:
    ranges = sorted(ranges)
    return [lo for lo, _ in ranges], [hi for _, hi in ranges]


def _in(table: Tuple[List[int], List[int]], cp: int) -> bool:
    i = bisect.bisect_right(table[0], cp) - 1
    return i >= 0 and cp <= table[1][i]


# Other_Grapheme_Extend (PropList.txt): spacing or letter-like code points that still extend.
_OTHER_GRAPHEME_EXTEND = _table([
    (0x09BE, 0x09BE), (0x09D7, 0x09D7), (0x0B3E, 0x0B3E), (0x0B57, 0x0B57), (0x0BBE, 0x0BBE),
    (0x0BD7, 0x0BD7), (0x0CC2, 0x0CC2), (0x0CD5, 0x0CD6), (0x0D3E, 0x0D3E), (0x0D57, 0x0D57),
    (0x0DCF, 0x0DCF), (0x0DDF, 0x0DDF), (0x1B35, 0x1B35), (0x200C, 0x200C), (0x302E, 0x302F),
    (0xFF9E, 0xFF9F), (0x1133E, 0x1133E), (0x11357, 0x11357), (0x114B0, 0x114B0), (0x114BD, 0x114BD),
    (0x115AF, 0x115AF), (0x11930, 0x11930), (0x1D165, 0x1D165), (0x1D16E, 0x1D172),
    (0xE0020, 0xE007F),  # emoji tag characters (subdivision flags)
    (0x1F3FB, 0x1F3FF),  # emoji modifiers (skin tones): Extend since Unicode 11
])

# Spacing marks (Mc) that UAX #29 excludes from SpacingMark (Myanmar, Tai Tham, Tai Viet, Ahom).
_NOT_SPACING_MARK = _table([
    (0x102B, 0x102C), (0x1038, 0x1038), (0x1062, 0x1064), (0x1067, 0x106D), (0x1083, 0x1083),
    (0x1087, 0x108C), (0x108F, 0x108F), (0x109A, 0x109C), (0x1A61, 0x1A61), (0x1A63, 0x1A64),
    (0xAA7B, 0xAA7B), (0xAA7D, 0xAA7D), (0x11720, 0x11721),
])

# Prepend: prepended concatenation marks and the Indic reph / prefix letters.
_PREPEND = _table([
    (0x0600, 0x0605), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2),
    (0x0D4E, 0x0D4E), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x111C2, 0x111C3), (0x1193F, 0x1193F),
    (0x11941, 0x11941), (0x11A3A, 0x11A3A), (0x11A84, 0x11A89), (0x11D46, 0x11D46), (0x11F02, 0x11F02),
])

# Unassigned default-ignorable code points: Control, so that a newer format character breaks.
_IGNORABLE_UNASSIGNED = _table([
    (0x2065, 0x2065), (0xFFF0, 0xFFF8), (0xE0000, 0xE0000), (0xE0002, 0xE001F), (0xE0080, 0xE00FF),
    (0xE01F0, 0xE0FFF),
])

# Extended_Pictographic (emoji-data.txt), as code-point ranges.
_EXTENDED_PICTOGRAPHIC = _table([
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049), (0x2122, 0x2122),
    (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA), (0x231A, 0x231B), (0x2328, 0x2328),
    (0x2388, 0x2388), (0x23CF, 0x23CF), (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2),
    (0x25AA, 0x25AB), (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712), (0x2714, 0x2714),
    (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721), (0x2728, 0x2728), (0x2733, 0x2734),
    (0x2744, 0x2744), (0x2747, 0x2747), (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755),
    (0x2757, 0x2757), (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C), (0x2B50, 0x2B50),
    (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D), (0x3297, 0x3297), (0x3299, 0x3299),
    (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F), (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171), (0x1F17E, 0x1F17F),
    (0x1F18E, 0x1F18E), (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1E5), (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A), (0x1F23C, 0x1F23F), (0x1F249, 0x1F3FA), (0x1F400, 0x1F53D),
    (0x1F546, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F), (0x1F7D5, 0x1F7FF), (0x1F80C, 0x1F80F),
    (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F), (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8FF), (0x1F90C, 0x1F93A),
    (0x1F93C, 0x1F945), (0x1F947, 0x1FAFF), (0x1FC00, 0x1FFFD),
])

# GB9c: the consonants (Indic_Syllabic_Category = Consonant) and viramas of the six scripts
# where Unicode 15.1 keeps conjuncts together.
_INCB_CONSONANT = _table([
    (0x0915, 0x0939), (0x0958, 0x095F), (0x0978, 0x097F),  # Devanagari
    (0x0995, 0x09A8), (0x09AA, 0x09B0), (0x09B2, 0x09B2), (0x09B6, 0x09B9), (0x09DC, 0x09DD),
    (0x09DF, 0x09DF), (0x09F0, 0x09F1),  # Bengali
    (0x0A95, 0x0AA8), (0x0AAA, 0x0AB0), (0x0AB2, 0x0AB3), (0x0AB5, 0x0AB9), (0x0AF9, 0x0AF9),  # Gujarati
    (0x0B15, 0x0B28), (0x0B2A, 0x0B30), (0x0B32, 0x0B33), (0x0B35, 0x0B39), (0x0B5C, 0x0B5D),
    (0x0B5F, 0x0B5F), (0x0B71, 0x0B71),  # Oriya
    (0x0C15, 0x0C28), (0x0C2A, 0x0C39), (0x0C58, 0x0C5A),  # Telugu
    (0x0D15, 0x0D3A),  # Malayalam
])
_INCB_LINKER = frozenset((0x094D, 0x09CD, 0x0ACD, 0x0B4D, 0x0C4D, 0x0D4D))

_HANGUL_BASE, _HANGUL_END, _HANGUL_T_COUNT = 0xAC00, 0xD7A3, 28


def _properties(ch: str) -> Tuple[int, bool, int]:
    """(Grapheme_Cluster_Break, Extended_Pictographic, Indic_Conjunct_Break) of one code point."""
    cp = ord(ch)
    if cp < 0x7F:
        gcb = CR if cp == 0x0D else LF if cp == 0x0A else CONTROL if cp < 0x20 else OTHER
        return gcb, False, INCB_NONE
    cat = unicodedata.category(ch)
    if cp == 0x200D:
        gcb = ZWJ
    elif cat in ("Mn", "Me") or _in(_OTHER_GRAPHEME_EXTEND, cp):
        gcb = EXTEND
    elif 0x1F1E6 <= cp <= 0x1F1FF:
        gcb = RI
    elif _in(_PREPEND, cp):
        gcb = PREPEND
    elif cat in ("Cc", "Zl", "Zp", "Cf", "Cs") or (cat == "Cn" and _in(_IGNORABLE_UNASSIGNED, cp)):
        gcb = CONTROL  # Cs: lone surrogates are refused by check_text; never join them to anything
    elif (cat == "Mc" and not _in(_NOT_SPACING_MARK, cp)) or cp in (0x0E33, 0x0EB3):
        gcb = SPACING_MARK
    elif 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        gcb = L
    elif 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        gcb = V
    elif 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        gcb = T
    elif _HANGUL_BASE <= cp <= _HANGUL_END:
        gcb = LV if (cp - _HANGUL_BASE) % _HANGUL_T_COUNT == 0 else LVT
    else:
        gcb = OTHER
    if cp in _INCB_LINKER:
        incb = INCB_LINKER
    elif _in(_INCB_CONSONANT, cp):
        incb = INCB_CONSONANT
    elif gcb in (EXTEND, ZWJ) and cp != 0x200C:  # ZWNJ is there to prevent a conjunct
        incb = INCB_EXTEND
    else:
        incb = INCB_NONE
    return gcb, _in(_EXTENDED_PICTOGRAPHIC, cp), incb


_CACHE: Dict[str, Tuple[int, bool, int]] = {}


def _props(ch: str) -> Tuple[int, bool, int]:
    p = _CACHE.get(ch)
    if p is None:
        p = _CACHE[ch] = _properties(ch)
    return p


def graphemes(text: str) -> List[str]:
    """The extended grapheme clusters of `text` (UAX #29), in order; they join back to `text`.

    >>> graphemes("yúwa\\u0301nt")
    ['y', 'ú', 'w', 'á', 'n', 't']
    >>> len(graphemes("👨\\u200d👩\\u200d👧"))
    1
    """
    if not text:
        return []
    out: List[str] = []
    start = 0
    prev, pict, incb = _props(text[0])
    ri_run = 1 if prev == RI else 0   # regional indicators in a row just before the current point
    emoji = 1 if pict else 0          # 1: ExtPict Extend*, 2: ExtPict Extend* ZWJ (GB11)
    conjunct = 1 if incb == INCB_CONSONANT else 0  # 1: Consonant [Extend Linker]*, 2: ... with a Linker
    cache = _CACHE
    for i in range(1, len(text)):
        props = cache.get(text[i])
        cur, pict, incb = props if props is not None else _props(text[i])
        if cur == OTHER and prev == OTHER and not pict and not incb:  # the common case: GB999
            out.append(text[start:i])
            start = i
            ri_run = emoji = conjunct = 0
            continue
        if prev == CR and cur == LF:                          # GB3
            join = True
        elif prev in (CONTROL, CR, LF) or cur in (CONTROL, CR, LF):  # GB4, GB5
            join = False
        elif prev == L and cur in (L, V, LV, LVT):            # GB6
            join = True
        elif prev in (LV, V) and cur in (V, T):               # GB7
            join = True
        elif prev in (LVT, T) and cur == T:                   # GB8
            join = True
        elif cur in (EXTEND, ZWJ, SPACING_MARK) or prev == PREPEND:  # GB9, GB9a, GB9b
            join = True
        elif conjunct == 2 and incb == INCB_CONSONANT:        # GB9c
            join = True
        elif emoji == 2 and prev == ZWJ and pict:             # GB11
            join = True
        elif prev == RI and cur == RI:                        # GB12, GB13
            join = ri_run % 2 == 1
        else:                                                 # GB999
            join = False
        if not join:
            out.append(text[start:i])
            start = i
        ri_run = ri_run + 1 if cur == RI else 0
        if pict:
            emoji = 1
        elif emoji == 1 and cur == EXTEND:
            emoji = 1
        elif emoji == 1 and cur == ZWJ:
            emoji = 2
        else:
            emoji = 0
        if incb == INCB_CONSONANT:
            conjunct = 1
        elif conjunct and incb == INCB_LINKER:
            conjunct = 2
        elif not (conjunct and incb == INCB_EXTEND):
            conjunct = 0
        prev = cur
    out.append(text[start:])
    return out


# ---------------------------------------------------------------- the units of spacy-ag


def check_units(units: str) -> str:
    """`units` if it is one of `UNITS`, else a one-line `TextError` [E112]."""
    if units not in UNITS:
        raise TextError(Errors.E112.format(units=units, choices=", ".join(UNITS)))
    return units


def check_text(text: str, source: Optional[str] = None) -> str:
    """`text` unchanged, or a one-line `TextError` [E110] if it holds a lone surrogate.

    `source` names the text in the message (``"corpus.txt:3"``); without it
    the message says "text".
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # strict UTF-8 refuses exactly the surrogates
    except UnicodeEncodeError as err:
        raise TextError(Errors.E110.format(where=source or "text", code=ord(text[err.start]),
                                           column=err.start + 1)) from None
    return text


def is_control(unit: str) -> bool:
    """A control character (Cc) that is not whitespace: NUL, ESC, DEL, the C1 controls."""
    if len(unit) != 1:
        return False
    cp = ord(unit)
    return (cp < 0x20 or 0x7F <= cp <= 0x9F) and not unit.isspace()


def is_hard_boundary(unit: str) -> bool:
    """Whitespace or a control character: never a terminal, never inside a word."""
    return unit.isspace() or is_control(unit)


def _split_whitespace(cluster: str, out: List[str]) -> None:
    start = 0
    for i, ch in enumerate(cluster):
        if ch.isspace():
            if start < i:
                out.append(cluster[start:i])
            out.append(ch)
            start = i + 1
    if start < len(cluster):
        out.append(cluster[start:])


#: Characters that are a grapheme cluster of their own next to any other such character (break
#: property Other, not pictographic, no Indic conjunct role), and those of them that are digits or
#: Latin letters (`_alnum`, joined into runs by alnum-runs): a text made only of the first is cut
#: into its code points, then into runs for alnum-runs.
_LONERS: set = set()
_LONERS_ALNUM: set = set()
_NOT_LONERS: set = set()


def _all_loners(text: str) -> bool:
    """Whether every character of `text` is in `_LONERS` (learning the characters seen first here)."""
    if _LONERS.issuperset(text):
        return True
    for ch in set(text).difference(_LONERS):
        if ch in _NOT_LONERS:
            return False
        gcb, pict, incb = _props(ch)
        if gcb == OTHER and not pict and incb == INCB_NONE:
            if _alnum(ch):
                _LONERS_ALNUM.add(ch)
                _LONER_CLASS[ord(ch)] = "d" if _digit(ch) else "a"
            else:
                _LONER_CLASS[ord(ch)] = "i" if ch in _NUMBER_INNER else "p" if ch in _PERCENT else "o"
            _LONERS.add(ch)
        else:
            _NOT_LONERS.add(ch)
            return False
    return True


#: The class of each loner for `_loner_runs`: d a digit, a another letter `_alnum` accepts, i a
#: character inside numbers (`_NUMBER_INNER`), p a percent sign, o any other
_LONER_CLASS: Dict[int, str] = {}
#: `alnum_runs` over classes: letters and digits, a number's inner character between two digits,
#: and a percent sign after a digit, which ends the run
_LONER_RUN = re.compile(r"[ad]+(?:(?<=d)i(?=d)[ad]+)*(?:(?<=d)p)?")


def _loner_runs(text: str) -> List[str]:
    """`alnum_runs(list(text))` for a text of loners (`_all_loners`), by a regular expression over
    the characters' classes instead of a Python loop over them."""
    out: List[str] = []
    pos = 0
    for match in _LONER_RUN.finditer(text.translate(_LONER_CLASS)):
        start, end = match.span()
        out.extend(text[pos:start])
        out.append(text[start:end])
        pos = end
    out.extend(text[pos:])
    return out


def text_units(text: str, units: str = DEFAULT_UNITS, source: Optional[str] = None) -> List[str]:
    """`text` cut into units (grapheme clusters or code points) that join back to `text`.

    Every whitespace code point is a unit of its own (see the module doc);
    a lone surrogate raises `TextError` [E110] (`source` names the text).
    """
    check_text(text, source)
    if units == "codepoints" or text.isascii():  # ASCII: clusters are code points (but CR LF)
        if units not in UNITS:
            check_units(units)
        out = list(text)
    elif units in UNITS and _all_loners(text):  # every character a cluster of its own
        if units != "alnum-runs" or _LONERS_ALNUM.isdisjoint(text):
            return list(text)
        return _loner_runs(text)
    else:
        check_units(units)
        out = []
        for cluster in graphemes(text):
            if len(cluster) > 1 and any(ch.isspace() for ch in cluster):
                _split_whitespace(cluster, out)
            else:
                out.append(cluster)
    return alnum_runs(out) if units == "alnum-runs" else out


#: Characters that stay inside a number when a digit comes on both sides (1.3, 3／4, 1,000, 10:30)
_NUMBER_INNER = frozenset(".,:/．，：／")
_PERCENT = frozenset("%％")


def _alnum(unit: str) -> bool:
    """A digit (Nd) or a Latin letter, half- or full-width, with its combining marks."""
    ch = unit[0]
    known = _ALNUM_FIRST.get(ch)
    if known is None:
        if ch.isascii():
            known = ch.isalnum()
        else:
            known = unicodedata.category(ch) == "Nd" or (ch.isalpha() and "LATIN" in unicodedata.name(ch, ""))
        _ALNUM_FIRST[ch] = known
    return known


#: `_alnum` of each first character met so far
_ALNUM_FIRST: Dict[str, bool] = {}


def _digit(unit: str) -> bool:
    return unicodedata.category(unit[0]) == "Nd"


def alnum_runs(units: Sequence[str]) -> List[str]:
    """`units` with each maximal run of digits and Latin letters joined into one unit.

    A decimal point, comma, colon or slash joins the run when digits stand on
    both sides of it, and a percent sign joins when a digit precedes it; any
    other character, whitespace included, ends the run.
    """
    out: List[str] = []
    run: List[str] = []
    n = len(units)
    for i, unit in enumerate(units):
        if _alnum(unit):
            run.append(unit)
            continue
        if run and _digit(run[-1]):
            if unit in _NUMBER_INNER and i + 1 < n and _digit(units[i + 1]):
                run.append(unit)
                continue
            if unit in _PERCENT:  # ends the number
                out.append("".join(run) + unit)
                run = []
                continue
        if run:
            out.append("".join(run))
            run = []
        out.append(unit)
    if run:
        out.append("".join(run))
    return out


def terminals(text: str, units: str = DEFAULT_UNITS, source: Optional[str] = None) -> List[str]:
    """The units of `text` without its whitespace: the terminals of ``mode = "chars"``.

    Control characters stay in the list (callers treat them as hard
    boundaries, `is_control`).
    """
    if units in ("graphemes", "codepoints") and text.isascii():  # str.split() drops exactly isspace()
        return list("".join(text.split()))
    return [u for u in text_units(text, units, source) if not u.isspace()]


def terminal_spans(text: str, units: str = DEFAULT_UNITS) -> List[Tuple[int, int]]:
    """Character offsets ``(start, end)`` in `text` of each of its `terminals`, in order."""
    spans: List[Tuple[int, int]] = []
    pos = 0
    for unit in text_units(text, units):
        end = pos + len(unit)
        if not unit.isspace():
            spans.append((pos, end))
        pos = end
    return spans
