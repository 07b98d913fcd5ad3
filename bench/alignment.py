"""Word alignment error rate of attention, by decoder layer and way of reading, against
hand-made alignments.

bench/alignment.en-de.tsv holds sure word links of 30 sentence pairs of Multi30k's validation
set, written by hand. Each run given reads each pair under teacher forcing (the reference as its
output); each decoder layer's cross-attention (its heads averaged) is read three ways: nmt's
(each source piece linked to the target piece attending to it most, the links the target side
confirms preferred: nmt_cli/alignment.py), the same without that preference, and the other way
round (each target piece linked to the source piece it attends to most, as fairseq and
OpenNMT print alignments). The table gives the alignment error rate against the sure links,
1 - 2 |A & S| / (|A| + |S|) (Och and Ney, 2003, with no "possible" links), with precision and
recall; beside them, the monotone baseline that links target word j to source word
round(j * |source| / |target|). A validation set, so the way nmt reads attention
(ALIGNMENT_LAYER, piece_links) is chosen here.

    python -m bench.alignment RUN [RUN ...] [--data DIR] [--json FILE]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .common import (
    add_data_option,
    markdown_table,
    multi30k_dir,
    new_parser,
    report_table,
)

if TYPE_CHECKING:
    from nmt_cli.config import DecodeConfig

GOLD = Path(__file__).resolve().parent / "alignment.en-de.tsv"


def read_gold(path: Path = GOLD) -> dict[int, set[tuple[int, int]]]:
    """{1-based line number: its sure links}."""
    gold = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            number, links = line.split("\t")
            gold[int(number)] = {tuple(map(int, link.split("-"))) for link in links.split()}
    return gold


def scores(found: list[set], gold: list[set]) -> dict:
    """Precision, recall and alignment error rate (in %) of links over all sentences."""
    hits = sum(len(a & s) for a, s in zip(found, gold))
    proposed, sure = sum(map(len, found)), sum(map(len, gold))
    return {"precision": round(100 * hits / max(proposed, 1), 1),
            "recall": round(100 * hits / max(sure, 1), 1),
            "aer": round(100 * (1 - 2 * hits / max(proposed + sure, 1)), 1)}


def monotone(source: str, target: str) -> set[tuple[int, int]]:
    n, m = len(source.split()), len(target.split())
    return {(min(round(j * n / m), n - 1), j) for j in range(m)}


def one_way(weights, source_words: list, target_words: list, by_column: bool) -> set:
    """Word links of each source piece to the target piece that attends to it most
    (`by_column`), or of each target piece to the source piece it attends to most."""
    rows = [r for r, word in enumerate(target_words) if word is not None]
    columns = [c for c, word in enumerate(source_words) if word is not None]
    if not rows or not columns:
        return set()
    grid = weights[rows][:, columns]
    if by_column:
        return {(source_words[columns[c]], target_words[rows[r]])
                for c, r in enumerate(grid.argmax(0).tolist())}
    return {(source_words[columns[c]], target_words[rows[r]])
            for r, c in enumerate(grid.argmax(1).tolist())}


READINGS = ("nmt: source to target, confirmed", "source to target", "target to source")


def into_german(translator) -> DecodeConfig:
    """Decoding settings that read the hand-aligned pairs: a model of several target
    languages is told German."""
    from nmt_cli.config import DecodeConfig

    return DecodeConfig(tgt_lang="de" if translator.run.tokenizer.languages else "")


def layer_rows(run: Path, sources: list[str], targets: list[str],
               gold: list[set]) -> list[dict]:
    """A row per (decoder layer, reading) of one run."""
    from nmt_cli.alignment import (
        hard_links,
        hypothesis_attention,
        line_positions,
        source_positions,
    )
    from nmt_cli.translate import Translator

    translator = Translator.from_run(run, device="cpu")
    model, tokenizer = translator.run.model, translator.run.tokenizer
    src_ids = translator.encode(sources, into_german(translator))
    tgt_ids = tokenizer.encode_tgt(targets)
    words = [(source_positions(tokenizer, source, s),
              line_positions(tokenizer.tgt, target.split(), t))
             for source, target, s, t in zip(sources, targets, src_ids, tgt_ids)]
    layers = len(getattr(model, "decoder_layers", [None]))
    rows = []
    for layer in range(layers):
        weights = hypothesis_attention(model, src_ids, tgt_ids, translator.device, layer - layers)
        for reading in READINGS:
            found = [set(hard_links(w, s, t)) if reading.startswith("nmt") else
                     one_way(w, s, t, by_column=reading == "source to target")
                     for w, (s, t) in zip(weights, words)]
            rows.append({"run": run.name, "layer": f"{layer + 1} of {layers}",
                         "reading": reading, **scores(found, gold)})
            print(rows[-1], flush=True)
    return rows


def hand_aligned(data: Path | None) -> tuple[list[str], list[str], list[set]]:
    """The hand-aligned pairs of Multi30k's validation set: sources, references and their
    sure links, in line order."""
    from nmt_cli.data import read_parallel

    corpus = multi30k_dir(data)
    pairs = read_parallel(corpus / "val.en.gz", corpus / "val.de.gz")
    gold_by_line = read_gold()
    numbers = sorted(gold_by_line)
    return ([pairs.src[n - 1] for n in numbers], [pairs.tgt[n - 1] for n in numbers],
            [gold_by_line[n] for n in numbers])


def alignment_error_rates(runs: list[Path], data: Path | None) -> list[dict]:
    sources, targets, gold = hand_aligned(data)
    rows = [{"run": "-", "layer": "monotone baseline", "reading": "-",
             **scores([monotone(s, t) for s, t in zip(sources, targets)], gold)}]
    for run in runs:
        rows += layer_rows(run, sources, targets, gold)
    return rows


def markdown(rows: list[dict]) -> str:
    return markdown_table(
        ["run", "decoder layer", "reading", "AER", "precision", "recall"],
        [[r["run"], r["layer"], r["reading"], *(f"{r[key]:.1f}%" for key in
                                                ("aer", "precision", "recall"))] for r in rows])


def main(name: str = __spec__.name, doc: str = __doc__, measure=alignment_error_rates,
         table=markdown) -> None:
    """The command line of a bench over the hand-aligned pairs (this one's by default):
    `measure(runs, data)` gives the rows that `table` prints."""
    parser = new_parser(name, doc)
    parser.add_argument("runs", type=Path, nargs="+", help="run directories (English-German)")
    add_data_option(parser)
    parser.add_argument("--json", type=Path, help="also write the table here")
    args = parser.parse_args()
    report_table(lambda: measure(args.runs, args.data), args.json, table)


if __name__ == "__main__":
    main()
