"""Inline markup carried through translation: `<b>`, `<a href="...">`, `<br/>` and their kin.

A line such as `A <b>red</b> car.` is translated as its text alone ("A red car."); each tag
then goes back around the words of the translation that the words it enclosed align to
(alignment.py): `Ein <b>rotes</b> Auto.`. The markup is HTML or XML written inline: an element
opens and closes on the same line and elements nest. A tag that encloses no word (`<br/>`,
`<img ...>`, a comment, an empty element) goes before the translation of the word that
followed it; so do a declaration (`<!DOCTYPE html>`), a processing instruction (`<?xml
...?>`) and a CDATA section, kept whole, untranslated. Text is read with its character
references decoded (`&amp;` is "&") and written with &, < and > escaped; tags are written
back as they came, attributes untranslated. Tags sit against the words they enclose: the
spaces inside an element's edges are not kept.

Where the translation reorders words, elements move with them; an element whose words would
cross another's is cut short so that elements still nest (it may end up empty). A "<" that
opens no tag is text ("3 < 4"), and so is a language tag such as "<2de>" (languages.py).
"""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from .alignment import Link
from .errors import UserError

NAME = r"[A-Za-z][\w:.-]*"
# markup that stands alone (a comment, a CDATA section, a declaration such as <!DOCTYPE html>,
# a processing instruction such as <?xml ...?>), a closing tag, or an opening or self-closing
# one (attribute values may hold ">")
TAG = re.compile(r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<![A-Za-z][^<>]*>|<\?.*?\?>"
                 rf"|</({NAME})\s*>|<({NAME})(?:[\s/](?:[^<>\"']|\"[^\"]*\"|'[^']*')*)?>",
                 re.DOTALL)
# HTML's elements that have no closing tag: <br> encloses nothing, as <br/> does
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                  "source", "track", "wbr"})
WORD = re.compile(r"\S+")  # a word as str.split finds it


@dataclass
class Element:
    """A tag pair and what it encloses, or a tag alone (`close` ""): its place in the text
    as characters before its start and its end (equal for a tag alone), and the elements
    inside it."""

    open: str  # the opening tag as written (a tag alone: all of it)
    close: str = ""  # the closing tag as written
    start: int = 0
    end: int = 0
    children: list[Element] = field(default_factory=list)


@dataclass(frozen=True)
class Marked:
    """A line taken apart: its text, to translate, and the markup to put back."""

    text: str
    elements: list[Element]

    def restore(self, translation: str, links: Iterable[Link]) -> str:
        """`translation` (of self.text) with the markup put back by its word alignment to
        self.text: (source word, target word) pairs as translations carry them."""
        words = translation.split()
        targets: dict[int, list[int]] = {}
        for source, target in links:
            targets.setdefault(source, []).append(target)
        spans = [match.span() for match in WORD.finditer(self.text)]
        placing = Placing(self.text, spans, targets, len(words))
        tokens: list[tuple[str, str]] = []
        placing.render(self.elements, 0, len(words), words, tokens)
        return join(tokens)


@dataclass(frozen=True)
class Placing:
    """Where elements go in a translation of `length` words: `spans`, the (start, end)
    characters of the words of `text`, the source; `targets`, the target words each source
    word links to."""

    text: str
    spans: list[tuple[int, int]]
    targets: dict[int, list[int]]
    length: int

    def wanted(self, element: Element) -> tuple[int, int]:
        """The target words [start, end) the element's source words link to, first to last;
        (p, p) for an element with none: p the first target word linked to a source word
        at or after it."""
        covered = [] if element.end == element.start else [
            i for i, (start, end) in enumerate(self.spans)
            if start < element.end and end > element.start]
        linked = [j for i in covered for j in self.targets.get(i, [])]
        if linked:
            return min(linked), max(linked) + 1
        first = covered[0] if covered else sum(end <= element.start for _, end in self.spans)
        after = [j for i, js in self.targets.items() if i >= first for j in js]
        position = min(after, default=self.length)
        return position, position

    def render(self, elements: list[Element], low: int, high: int, words: list[str],
               tokens: list[tuple[str, str]]) -> None:
        """Append the tokens of target words [low, high) with `elements` placed among them:
        in the order of where they go, each clipped to [low, high) and to after the one
        before, so that they nest."""
        wanted = sorted(((self.wanted(element), k) for k, element in enumerate(elements)),
                        key=lambda pair: (pair[0][0], pair[1]))  # by start, then as written
        cursor = low  # no element starts before it
        for (start, end), k in wanted:
            element = elements[k]
            start = min(max(start, cursor), high)
            end = max(min(end, high), start)
            tokens += [("word", html.escape(word, quote=False)) for word in words[cursor:start]]
            if not element.close:
                tokens.append(("alone", element.open))
            else:
                head, tail = self.edges(element, words, start, end)
                if head:
                    tokens.append(("head", html.escape(head, quote=False)))
                    words[start] = words[start][len(head):]
                if tail:
                    words[end - 1] = words[end - 1][: -len(tail)]
                tokens.append(("open", element.open))
                self.render(element.children, start, end, words, tokens)
                tokens.append(("close", element.close))
                if tail:
                    tokens.append(("tail", html.escape(tail, quote=False)))
            cursor = max(cursor, end)
        tokens += [("word", html.escape(word, quote=False)) for word in words[cursor:high]]

    def edges(self, element: Element, words: list[str], start: int,
              end: int) -> tuple[str, str]:
        """The punctuation of the source words the element cuts that lies outside it (the
        "(" and ")" of "(<b>word</b>)"), each where the target word at that edge has it too,
        so that it stays outside; "" where there is none, and for an empty element."""
        if start == end:
            return "", ""
        head = tail = ""
        for first, last in self.spans:
            if first < element.start < last:
                head = self.text[first:element.start]
            if first < element.end < last:
                tail = self.text[element.end:last]
        word = words[start]
        head = head if punctuation(head) and word.startswith(head) and len(word) > len(head) else ""
        rest = words[end - 1][len(head):] if end - 1 == start else words[end - 1]
        tail = tail if punctuation(tail) and rest.endswith(tail) and len(rest) > len(tail) else ""
        return head, tail


def punctuation(text: str) -> bool:
    """Whether `text` is one or more characters, none a letter or a digit."""
    return bool(text) and not any(character.isalnum() for character in text)


def join(tokens: list[tuple[str, str]]) -> str:
    """Tokens as text: a space between two, except after an opening tag and before a closing
    one (tags sit against the words they enclose), and where a word's punctuation was split
    off it (a "head" before an opening tag, a "tail" after a closing one)."""
    out = []
    for k, (kind, text) in enumerate(tokens):
        if k and tokens[k - 1][0] not in ("open", "head") and kind not in ("close", "tail"):
            out.append(" ")
        out.append(text)
    return "".join(out)


def parse(line: str) -> Marked:
    """A line's text (character references decoded) and its elements; a one-line error for a
    closing tag that closes nothing, or another element, and for an element never closed."""
    text: list[str] = []
    length, done = 0, 0  # characters of text so far; of the line read
    root = Element("")
    open_elements = [root]
    for match in TAG.finditer(line):
        piece = html.unescape(line[done:match.start()])
        text.append(piece)
        length, done = length + len(piece), match.end()
        tag, closing, opening = match.group(0), match.group(1), match.group(2)
        inside = open_elements[-1]
        if closing is not None:
            if inside is root:
                raise UserError(f"{tag} closes no element")
            if name(inside.open) != closing.lower():
                raise UserError(f"{tag} closes {inside.open}: elements must nest")
            inside.close, inside.end = tag, length
            open_elements.pop()
        elif opening is not None and not tag.endswith("/>") and opening.lower() not in VOID:
            element = Element(tag, start=length)
            inside.children.append(element)
            open_elements.append(element)
        else:  # a comment, a self-closing tag, <br>
            inside.children.append(Element(tag, start=length, end=length))
    if len(open_elements) > 1:
        raise UserError(f"{open_elements[-1].open} is never closed")
    text.append(html.unescape(line[done:]))
    return Marked("".join(text), root.children)


def name(tag: str) -> str:
    """The element name of an opening tag, lower-cased."""
    match = re.match(rf"<({NAME})", tag)
    return match.group(1).lower() if match else ""


def parsed(lines: Iterable[str], at: str, first: int = 1) -> Iterator[tuple[str, Marked]]:
    """Each line with what parse makes of it, as it is read; a one-line error names the first
    that fails by `at` and its number, counted from `first` ("page.html:3: <b> is never
    closed")."""
    for number, line in enumerate(lines, first):
        try:
            yield line, parse(line)
        except UserError as e:
            raise UserError(f"{at}{number}: {e}") from None


def carried(marked: list[Marked], found: list[list]) -> list[list]:
    """The translations of each marked line's text (`found`: Translations with their word
    alignments, to the text) with the line's markup put back in their text."""
    return [[dataclasses.replace(h, text=line.restore(h.text, h.alignment or [])) for h in hyps]
            for line, hyps in zip(marked, found)]
