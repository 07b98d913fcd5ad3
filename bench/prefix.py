"""Interactive translation: how often a run predicts the reference's next word once it is
given the words before it.

A translator who has typed the first k words of a sentence gets the model's completion
(`nmt translate --prefix`), and the first new word of that completion is what an interactive
tool would suggest next. For k = 0, 1, 2, ... words of each reference as the prefix, the run's
chosen weights (bench.quality's rule) translate a split of the run's own corpus with beam
search, and the table gives the share of sentences, among those whose reference has more than
k words, whose translation keeps the k words and goes on with the reference's next one: the
word prediction accuracy of Knowles and Koehn (2016). Beside it, the share whose translation
without a prefix has the reference's word at that place: what the prefix adds. Words are split
at spaces.

    python -m bench.prefix RUN [--split test_2016_flickr] [--words 4] [--beam 5] [--json FILE]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .common import markdown_table, new_parser, report_table


def next_word_accuracy(run: Path, split: str, words: int, beam: int) -> list[dict]:
    """A row per prefix length k = 0 .. words: how many sentences have a next word to
    predict, the share predicted, the share the translation without a prefix has at that
    place, and the seconds the translation took."""
    from nmt_cli.checkpoint import read_config
    from nmt_cli.config import DecodeConfig
    from nmt_cli.data import corpus_dir, read_parallel
    from nmt_cli.learning_curves import read_metrics
    from nmt_cli.translate import Translator

    from .quality import chosen_weights

    data = read_config(run)[0].data
    if "," in data.tgt_lang:  # its sources would need a language tag each
        sys.exit(f"error: {run} translates into {data.tgt_lang}; use a run into one language")
    corpus = corpus_dir(data.data_dir)
    pairs = read_parallel(split_file(corpus, split, data.src_lang),
                          split_file(corpus, split, data.tgt_lang))
    translator = Translator.from_run(run, device="cpu", weights=chosen_weights(
        read_metrics(run))[0])
    references = [reference.split() for reference in pairs.tgt]
    rows: list[dict] = []
    plain: dict[int, list[str]] = {}  # the words of each translation without a prefix
    for k in range(words + 1):
        asked = [i for i, reference in enumerate(references) if len(reference) > k]
        start = time.perf_counter()
        outputs = translator.translate([pairs.src[i] for i in asked], DecodeConfig(beam=beam),
                                       prefixes=[" ".join(references[i][:k]) for i in asked])
        seconds = time.perf_counter() - start
        plain = plain or {i: output.split() for i, output in zip(asked, outputs)}  # at k = 0
        right = sum(predicts(output.split(), references[i], k)
                    for i, output in zip(asked, outputs))
        unaided = sum(plain[i][k : k + 1] == references[i][k : k + 1] for i in asked)
        rows.append({"words_given": k, "sentences": len(asked),
                     "next_word_accuracy": percent(right, len(asked)),
                     "without_prefix": percent(unaided, len(asked)),
                     "seconds": round(seconds, 1)})
        print(f"{k} words given: {rows[-1]['next_word_accuracy']:.2f}% of {len(asked)}, "
              f"{rows[-1]['without_prefix']:.2f}% without them ({seconds:.0f} s)", flush=True)
    return rows


def split_file(corpus: Path, split: str, lang: str) -> Path:
    """SPLIT.LANG in the run's corpus, or SPLIT.LANG.gz."""
    from nmt_cli.errors import UserError

    for path in (corpus / f"{split}.{lang}", corpus / f"{split}.{lang}.gz"):
        if path.is_file():
            return path
    raise UserError(f"{corpus}: no {split}.{lang} (nor .gz)")


def predicts(output: list[str], reference: list[str], k: int) -> bool:
    """Whether an output keeps the reference's first k words whole and goes on with its
    next one (an output that lengthened the k-th word predicted nothing)."""
    return output[: k + 1] == reference[: k + 1]


def percent(count: int, total: int) -> float:
    return round(100 * count / max(total, 1), 2)


def markdown(rows: list[dict]) -> str:
    return markdown_table(
        ["words given", "sentences", "next word right", "without the prefix", "seconds"],
        [[r["words_given"], f"{r['sentences']:,}", f"{r['next_word_accuracy']:.2f}%",
          f"{r['without_prefix']:.2f}%", f"{r['seconds']:.1f}"] for r in rows])


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("run", type=Path, help="a run directory")
    parser.add_argument("--split", default="test_2016_flickr",
                        help="a split of the run's corpus (default test_2016_flickr)")
    parser.add_argument("--words", type=int, default=4, help="the longest prefix, in words")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the table here")
    args = parser.parse_args()
    report_table(lambda: next_word_accuracy(args.run, args.split, args.words, args.beam),
                 args.json, markdown)


if __name__ == "__main__":
    main()
