"""Sentence splitting: a line of several sentences is translated a sentence at a time.

Models trained on sentence pairs (Multi30k's, and most corpora's) have rarely seen a line of
three sentences, and translate one badly: they drop or merge sentences. So with
`--split-sentences` (DecodeConfig.split_sentences) each line is cut into its sentences, they
are translated as lines of their own (in the same batches as the other lines), and their
translations are joined into one line again, one space between them (none after a full-width
stop). Word alignments are carried over to the words of the whole line (translate.Split).

A sentence ends after a run of . ! ? or … (with the closing quotes and brackets after it)
followed by a space, or after a run of the full-width 。！？, which needs no space, when the
next word (after any opening quotes or brackets) opens with a capital letter, a digit, a
letter of a script without case, # or a currency sign. A lone period ends no sentence after an
abbreviation (ABBREVIATIONS, whatever their case), nor before a number after NUMBERED ones
("No. 5", "S. 12"); nor after letters joined by periods ("e.g.", "z.B.", "U.S."), a single
letter (an initial: "J. Smith") or a number of one or two digits (an ordinal: "am 3.
Oktober"), unless an article or a pronoun follows (OPENERS: "the number 6. A dog ..."). After
a closing quote or bracket, a period may end a sentence whatever came before ('It read "4". A
dog ...'). The rules err on the side of not splitting: a break missed leaves two sentences
translated together, as without the option, where a wrong one cuts a sentence in two. The lists
hold one set for all languages; the words in them seldom end a sentence in any. Measured on
Multi30k's paragraphs, beside sentencex: bench/paragraphs.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .languages import TAG

STOPS = ".!?\u2026"  # . ! ? and the ellipsis: a space must follow
WIDE_STOPS = "\u3002\uff01\uff1f"  # 。！？ of Chinese and Japanese: none need follow
CLOSING = "\"'\u201d\u2019\u00bb\u203a)]}\u300d\u300f\uff09"  # " ' ” ’ » › ) ] } 」 』 ）
OPENING = "\"'\u201c\u2018\u201e\u00ab\u2039([{\u00bf\u00a1\u300c\u300e\uff08"  # “‘„«‹¿¡「『（
# a stop, the quotes and brackets that close after it (French sets a space before » and ›),
# and the space after them
END = re.compile(rf"(?P<stop>[{re.escape(STOPS)}]+|[{WIDE_STOPS}]+)"
                 rf"(?:[{re.escape(CLOSING)}]|[ \u00a0\u202f]+[\u00bb\u203a])*(?P<space>\s*)")
# Titles, and shortened words a name or a noun follows, in the languages nmt has met
ABBREVIATIONS = frozenset("""
    mr mrs ms dr prof sr jr st mt vs approx dept inc ltd corp co esq gov sgt capt lt hon ave
    blvd hr hrn fr frl dipl ing mag bzw ca evtl ggf inkl vgl sog str geb gest mme mlle mmes
    mlles ste pr sra srta dra sres ud uds lic sig sigg dott avv např tzv resp tj mj zn
""".split())
# Shortened words that a number follows: "No. 5", "Nr. 3", "S. 12", "Jan. 6"
NUMBERED = frozenset("""
    no nr nos art vol vols p pp s ch chap fig figs tel abs bd op sec jan feb mar apr jun jul aug
    sep sept oct nov dec
""".split())
# Articles, demonstratives and personal pronouns: words that open a sentence after an ordinal
# or an initial, and never follow one in the sentence
OPENERS = frozenset("""
    a an the this that these those he she it we they i you there
    ein eine einen einem einer der die das dem den des er sie es wir ich du ihr man
    un une le la les il elle ils elles nous vous je on ce cette ces
    el los las una unos unas ella ellos ellas yo lo gli uno os um uma het een hij zij wij
    ona ono oni my já ten ta to
""".split())
DOTTED = re.compile(r"(?:[^\W\d_]{1,2}\.)+[^\W\d_]{1,2}")  # e.g, z.B, U.S, p.m
ORDINAL = re.compile(r"\d{1,2}")


@dataclass(frozen=True)
class Sentence:
    """One sentence of a line, as it is translated."""

    text: str  # the line's language tag first, if it opens with one
    word: int  # the index of its first word among the line's (str.split) words
    added: int  # words at its front that are not the line's there (the tag: 1)


def split_sentences(line: str, tagged: bool = False) -> list[Sentence]:
    """The sentences of `line`; a line of one sentence (or none: a blank line) is given whole.
    With `tagged` (a model of several target languages), a language tag opening the line
    opens each of its sentences too, so each is translated into the language asked for."""
    tag, body, head = "", 0, line.split(maxsplit=1)[:1]
    if tagged and head and TAG.fullmatch(head[0]):
        tag = head[0]
        body = line.index(tag) + len(tag)
    starts = sentence_starts(line, body)
    if not starts:
        return [Sentence(line, 0, 0)]
    spans = zip([body, *starts], [*starts, len(line)])
    found = []
    for start, end in spans:
        text = line[start:end].strip()
        if text:
            start += len(line[start:end]) - len(line[start:end].lstrip())
            found.append(Sentence(f"{tag} {text}" if tag else text, word_index(line, start),
                                  1 if tag else 0))
    return found


def sentence_starts(line: str, begin: int = 0) -> list[int]:
    """Where in `line` (from `begin`) each sentence after the first opens."""
    starts = []
    for end in END.finditer(line, begin):
        after = end.end()
        if after == len(line) or not (end["space"] or end["stop"][0] in WIDE_STOPS):
            continue
        if not opens_sentence(line, after):
            continue
        if end["stop"] == "." and goes_on(word_before(line, end.start()),
                                          line[after:].split(maxsplit=1)[0]):
            continue
        starts.append(after)
    return starts


def opens_sentence(line: str, at: int) -> bool:
    """Whether the word at `at` may open a sentence: after any opening quotes or brackets, a
    capital letter, a digit, a letter of a script without case, or a sign of currency or of
    number."""
    while at < len(line) and line[at] in OPENING:
        at += 1
    if at == len(line):
        return False
    first = line[at]
    uncased = first.isalpha() and first.lower() == first.upper()
    return first.isupper() or first.isdigit() or uncased or first in "#$\u20ac\u00a3\u00a5"


def word_before(line: str, at: int) -> str:
    """The word that ends at `at` (a stop's position), as written."""
    start = at
    while start > 0 and not line[start - 1].isspace():
        start -= 1
    return line[start:at]


def goes_on(word: str, following: str) -> bool:
    """Whether a period after `word` leaves the sentence open, `following` the next word (both
    as written). After a quotation or a bracket it never does ("the number "4". A ..."); after
    an initial, letters joined by periods or an ordinal, not when an article or a pronoun
    follows ("the number 6. A dog ...")."""
    if word.endswith(tuple(CLOSING)):
        return False
    word = word.lstrip(OPENING)
    short = word.lower()
    if short in ABBREVIATIONS or (short in NUMBERED and following[:1].isdigit()):
        return True
    shortened = (len(word) == 1 and word.isalpha()) or DOTTED.fullmatch(word) or \
        ORDINAL.fullmatch(word)
    return bool(shortened) and following.lstrip(OPENING).lower() not in OPENERS


def word_index(text: str, at: int) -> int:
    """The index among text.split()'s words of the word holding position `at` (or opening
    there): a sentence joined to the one before without a space shares its first word."""
    before = text[:at].split()
    return len(before) - (1 if before and not text[at - 1].isspace() else 0)
