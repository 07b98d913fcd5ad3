"""A glossary: source terms and the target terms a translation must use for them
(`nmt translate --glossary terms.tsv`, DecodeConfig.glossary).

The file holds one entry a line, the source term, a tab, the target term ("bike<TAB>Fahrrad";
the same text twice keeps a name as it is); blank lines are skipped. A source term is found
in a line where it stands as whole words, with the same case; where entries overlap, the
longest wins. Each term found is a constraint on that line's translation: constrained.py's
beam search places its target term, as its target pieces, somewhere in every hypothesis.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from .data import iter_lines
from .errors import UserError


@dataclass(frozen=True)
class Glossary:
    terms: dict[str, str]  # source term -> target term

    @functools.cached_property
    def pattern(self) -> re.Pattern:
        """Any source term, not inside a longer word; longer terms tried first."""
        terms = sorted(self.terms, key=len, reverse=True)
        return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, terms)) + r")(?!\w)")

    def targets(self, line: str) -> list[str]:
        """The target terms of the source terms in `line`, in the order they occur (a term
        found twice, twice)."""
        return [self.terms[found.group()] for found in self.pattern.finditer(line)]


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
