"""A glossary: source terms and the target terms a translation must use for them
(`nmt translate --glossary terms.tsv`, DecodeConfig.glossary).

The file holds one entry a line, the source term, a tab, the target term ("bike<TAB>Fahrrad";
the same text twice keeps a name as it is); blank lines are skipped. A source term is found in
a line where it stands as whole words, with the same case (or in any case, with `ignore_case`:
"Bike" opening a sentence); where entries overlap, the longest wins. Each term found is a
constraint on that line's translation: constrained.py's beam search places its target term, as
its target pieces, somewhere in every hypothesis.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .data import iter_lines
from .errors import UserError


@dataclass(frozen=True)
class Glossary:
    terms: dict[str, str]  # source term -> target term
    # a glossary these terms are added to, whose entry for a source term of theirs they
    # replace: a server's, under a request's own (matched apart, so that it is compiled once)
    under: Glossary | None = None

    @functools.cached_property
    def pattern(self) -> re.Pattern:
        """Any source term, not inside a longer word; longer terms tried first. No terms:
        nothing (an empty alternation would match the empty string everywhere)."""
        terms = sorted(self.terms, key=len, reverse=True)
        if not terms:
            return re.compile(r"(?!)")
        return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, terms)) + r")(?!\w)")

    @functools.cached_property
    def pattern_any_case(self) -> re.Pattern:
        return re.compile(self.pattern.pattern, re.IGNORECASE)

    @functools.cached_property
    def folded(self) -> dict[str, str]:
        """Each source term in lower case -> its entry (the first of those equal so)."""
        out: dict[str, str] = {}
        for term in self.terms:
            out.setdefault(term.casefold(), term)
        return out

    def targets(self, line: str, ignore_case: bool = False,
                writable: Callable[[str], bool] | None = None) -> list[str]:
        """The target terms of the source terms in `line`, in the order they occur (a term
        found twice, twice). With `ignore_case`, a term matches in any case; the entry of
        that case wins, and the target term of another follows the case of the match (cased),
        unless the model cannot write it so (`writable`: "CAFÉ" without "É"): then it comes
        as written."""
        if not ignore_case:
            return [glossary.terms[text] for glossary, text in self.found(line, False)]
        out = []
        for glossary, text in self.found(line, True):
            entry = text if text in glossary.terms else glossary.folded.get(text.casefold())
            if entry is None:  # "İstanbul" matches "istanbul" in any case, but folds otherwise
                entry = next(term for term in glossary.terms
                             if re.fullmatch(re.escape(term), text, re.IGNORECASE))
            term = cased(glossary.terms[entry], text, entry)
            if writable is not None and term != glossary.terms[entry] and not writable(term):
                term = glossary.terms[entry]
            out.append(term)
        return out

    def found(self, line: str, ignore_case: bool) -> Iterator[tuple[Glossary, str]]:
        """The source terms in `line` in order, as (the glossary of the entry, the text
        found): leftmost first, the longest where they overlap, this glossary's before an
        equal one of the glossary under it. As one pattern of all their terms would find them."""
        layers, under = [self], self.under
        while under is not None:
            layers, under = [*layers, under], under.under
        patterns = [g.pattern_any_case if ignore_case else g.pattern for g in layers]
        position = 0
        while True:
            found = [(g, match) for g, pattern in zip(layers, patterns)
                     if (match := pattern.search(line, position))]
            if not found:
                return
            glossary, match = min(found, key=lambda f: (f[1].start(), -f[1].end()))
            yield glossary, match.group()
            position = match.end()


def cased(target: str, text: str, entry: str) -> str:
    """The target term of `entry` for a match `text` in another case: in capitals for a
    match in capitals ("BIKE"), with a capital first letter for a match that gains one
    ("Bike" opening a sentence), else as written."""
    if len(text) > 1 and text.isupper() and not entry.isupper():
        return target.upper()
    if text[:1].isupper() and not entry[:1].isupper():
        return target[:1].upper() + target[1:]
    return target


def read_glossary(path: str) -> Glossary:
    """The glossary in file `path`; each bad line is a one-line error naming it."""
    terms: dict[str, str] = {}
    for number, line in enumerate(iter_lines(Path(path)), start=1):
        if not line.strip():
            continue
        parts = [part.strip() for part in line.split("\t")]
        where = f"{path}:{number}"
        if len(parts) != 2 or not all(parts):
            raise UserError(f"{where}: expected a source term, a tab and a target term")
        source, target = parts
        if terms.get(source, target) != target:
            raise UserError(f"{where}: {source!r} is already given as {terms[source]!r}")
        terms[source] = target
    if not terms:
        raise UserError(f"{path}: the glossary has no terms")
    return Glossary(terms)
