"""Where `--markup` puts a tag: how often it encloses the right words of the translation.

Each word, and each run of 2 and of 3 words, of the 30 hand-aligned sentence pairs of
Multi30k's validation set (bench/alignment.en-de.tsv) is put in <b>...</b> in turn. The German
reference gets the tag back (nmt_cli/markup.py) by a run's word alignment of it, read under
teacher forcing at ALIGNMENT_LAYER as `nmt translate --alignment` reads a translation. The
right place is the reference's words from the first to the last that the hand-made links tie
to the enclosed English words; spans that no link ties are skipped. The table gives the share
of tags placed exactly right and the mean overlap (F1 over words) with the right place, by
span length; beside the runs, the monotone baseline's links (bench/alignment.py).

    python -m bench.markup RUN [RUN ...] [--data DIR] [--json FILE]
"""

from __future__ import annotations

import re
from pathlib import Path

from . import alignment
from .alignment import hand_aligned, into_german, monotone
from .common import markdown_table

LENGTHS = (1, 2, 3)


def spans(source: str, gold: set[tuple[int, int]], length: int) -> list[tuple[int, int, set]]:
    """(first, end) of each run of `length` source words, with the target words from the
    first to the last that the gold links tie to it (runs tied to none are left out)."""
    out = []
    for first in range(len(source.split()) - length + 1):
        tied = [t for s, t in gold if first <= s < first + length]
        if tied:
            out.append((first, first + length, set(range(min(tied), max(tied) + 1))))
    return out


def placed(source: str, first: int, end: int, target: str, links) -> set[int]:
    """The target words <b> encloses once `markup` puts it back into `target`."""
    from nmt_cli.markup import parse

    words = source.split()
    line = " ".join([*words[:first], "<b>" + " ".join(words[first:end]) + "</b>", *words[end:]])
    out = parse(parse(line).restore(target, links))
    element = out.elements[0]
    return {i for i, word in enumerate(re.finditer(r"\S+", out.text))
            if word.start() < element.end and word.end() > element.start}


def f1(found: set[int], right: set[int]) -> float:
    hits = len(found & right)
    return 2 * hits / (len(found) + len(right)) if hits else 0.0


def row(name: str, sources: list[str], targets: list[str], gold: list[set],
        links: list) -> dict:
    out = {"run": name}
    for length in LENGTHS:
        scored = [(placed(source, first, end, target, found), right)
                  for source, target, g, found in zip(sources, targets, gold, links)
                  for first, end, right in spans(source, g, length)]
        out[f"exact {length}"] = round(100 * sum(p == r for p, r in scored) / len(scored), 1)
        out[f"f1 {length}"] = round(100 * sum(f1(p, r) for p, r in scored) / len(scored), 1)
        out[f"tags {length}"] = len(scored)
    print(out, flush=True)
    return out


def run_links(run: Path, sources: list[str], targets: list[str]) -> list[list]:
    """A run's word alignment of each reference to its source, as --alignment reads it."""
    from nmt_cli.alignment import hypothesis_attention, word_alignments
    from nmt_cli.guided_alignment import ALIGNMENT_LAYER
    from nmt_cli.translate import Translator

    translator = Translator.from_run(run, device="cpu")
    tokenizer = translator.run.tokenizer
    src_ids = translator.encode(sources, into_german(translator))
    tgt_ids = tokenizer.encode_tgt(targets)
    weights = hypothesis_attention(translator.run.model, src_ids, tgt_ids, translator.device,
                                   ALIGNMENT_LAYER)
    return [word_alignments(tokenizer, source, s, [t], [w], [target])[0]
            for source, target, s, t, w in zip(sources, targets, src_ids, tgt_ids, weights)]


def placements(runs: list[Path], data: Path | None) -> list[dict]:
    sources, targets, gold = hand_aligned(data)
    rows = [row("monotone baseline", sources, targets, gold,
                [sorted(monotone(s, t)) for s, t in zip(sources, targets)])]
    for run in runs:
        rows.append(row(run.name, sources, targets, gold, run_links(run, sources, targets)))
    return rows


def markdown(rows: list[dict]) -> str:
    header = ["links"] + [f"{what} ({length} word{'s' * (length > 1)}, "
                          f"{rows[0][f'tags {length}']} tags)"
                          for length in LENGTHS for what in ("exact", "F1")]
    return markdown_table(header, [[r["run"], *(f"{r[f'{key} {length}']:.1f}%" for length in
                                                LENGTHS for key in ("exact", "f1"))]
                                   for r in rows])


if __name__ == "__main__":
    alignment.main(__spec__.name, __doc__, placements, markdown)
