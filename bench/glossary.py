"""Terms a translation must use (--glossary): how often constrained beam search places them,
what it does to BLEU, and what it costs.

As Post and Vilar (2018) measured dynamic beam allocation, the terms come from the
reference: for each test_2016_flickr sentence, words of its reference that the run's own beam
translation lacks, drawn at random (seeded). Four settings: one such word; two of them, each
a constraint of its own; one run of two reference words (a two-word term); and one noun (a
capitalised word, not the first) that ends in an inflectional ending, given in its base form
as a glossary would hold it: the shortest word of the training German that the reference
word is with one to three lower-case letters added ("Hunde": "Hund", "Autos": "Auto";
`base_form`, a rule of thumb: "Wetter" gives "Wette" too). Each is decoded with the
constraints of its sentence (constrained.translate_constrained, the search behind --glossary)
as given and inflected (--glossary-inflect), and without (plain beam search). The table gives,
per run, setting and search, the share of terms placed (whole; inflected: whole or with an
ending), the share of the reference's words in the translations, BLEU against the reference,
and seconds for the set. A term drawn from the reference lifts BLEU by itself; the gain says
the search fits the rest of the sentence around it, a loss that it does not. With `--pair
en-fr` or `en-cs` the runs translate into French or Czech, whose training text gives the base
forms, and whose nouns are not capitalised: any word but the first may be drawn as one. The
rule suits German; in Czech it seldom finds a lemma ("bíl" for "bílý", "kost" for "kostýmu").

    python -m bench.glossary RUN [RUN ...] [--pair en-de] [--data DIR] [--sentences 1000]
                             [--json FILE]
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import replace
from pathlib import Path

from .common import add_data_option, markdown_table, multi30k_dir, new_parser, report_table

SETTINGS = {"one word": (1, 1), "two words": (2, 1), "a two-word term": (1, 2),
            "one word, base form": (1, 1)}
BASE_FORM = "one word, base form"
SEARCHES = {"as given": False, "inflected": True}
PAIRS = ("en-de", "en-fr", "en-cs")  # Multi30k's pairs with a test_2016_flickr


def words(text: str) -> list[str]:
    """The words of a line without the signs around them."""
    return re.sub(r"[^\w\s-]", " ", text).split()


def holds(text: str, term: str) -> bool:
    return f" {' '.join(words(term))} " in f" {' '.join(words(text))} "


def holds_inflected(text: str, term: str) -> bool:
    """Whether `text` holds `term`, its last word whole or with an ending
    (constrained.inflects)."""
    from nmt_cli.constrained import inflects

    *first, last = words(term)
    found = words(text)
    return any(found[i : i + len(first)] == first and inflects(found[i + len(first)], last)
               for i in range(len(found) - len(first)))


def base_form(word: str, known: set[str]) -> str | None:
    """The shortest of `known` that `word` is with an ending added (one to three lower-case
    letters: constrained.is_ending), of three letters or more; None if there is none."""
    from nmt_cli.constrained import MAX_ENDING, is_ending

    for cut in range(MAX_ENDING, 0, -1):
        stem = word[:-cut]
        if len(stem) >= 3 and is_ending(word[-cut:]) and stem in known:
            return stem
    return None


def draw_terms(reference: str, output: str, count: int, length: int,
               rng: random.Random, known: set[str] | None = None,
               capitalised: bool = True) -> list[str]:
    """`count` runs of `length` reference words that `output` lacks (fewer if there are not
    so many), none overlapping; with `known` (words), only nouns (not the first word, and
    capitalised, in German: `capitalised`) that have a base form among them."""
    ref = words(reference)
    spans = [i for i in range(len(ref) - length + 1)
             if all(w.isalpha() for w in ref[i : i + length])
             and not holds(output, " ".join(ref[i : i + length]))
             and (known is None or (i > 0 and (ref[i][0].isupper() or not capitalised)
                                    and base_form(ref[i], known) is not None))]
    rng.shuffle(spans)
    chosen: list[int] = []
    for i in spans:
        if len(chosen) < count and all(abs(i - j) >= length for j in chosen):
            chosen.append(i)
    return [" ".join(ref[i : i + length]) for i in sorted(chosen)]


def measure(runs: list[Path], data: Path | None, sentences: int,
            pair: str = "en-de") -> list[dict]:
    import sacrebleu

    from nmt_cli.config import DecodeConfig
    from nmt_cli.constrained import sentence_breaks, translate_constrained
    from nmt_cli.data import read_lines
    from nmt_cli.translate import Translator

    src, tgt = pair.split("-")
    corpus = multi30k_dir(data, pair)
    sources = read_lines(corpus / f"test_2016_flickr.{src}.gz")[:sentences]
    references = read_lines(corpus / f"test_2016_flickr.{tgt}.gz")[:sentences]
    known = {w for line in read_lines(corpus / f"train.{tgt}.gz") for w in words(line)}
    config = DecodeConfig(beam=5, device="cpu")
    rows = []
    for run in runs:
        translator = Translator.from_run(run, "cpu")
        tokenizer, model = translator.tokenizer, translator.run.model
        start = time.perf_counter()
        plain = translator.translate(sources, config)
        plain_seconds = time.perf_counter() - start
        src_ids = translator.encode(sources, config)
        for name, (count, length) in SETTINGS.items():
            rng = random.Random(1)
            wanted = [draw_terms(r, o, count, length, rng, known if name == BASE_FORM else None,
                                 tgt == "de") for r, o in zip(references, plain)]
            terms = [[base_form(w, known) for w in own] for own in wanted] \
                if name == BASE_FORM else wanted
            ids = [tokenizer.encode_tgt(own) if own else [] for own in terms]
            for search, inflect in SEARCHES.items():
                start = time.perf_counter()
                found = translate_constrained(
                    model, src_ids, ids, replace(config, glossary_inflect=inflect),
                    translator.device, pieces=translator.target_pieces(),
                    breaks=[sentence_breaks(s) for s in sources])
                seconds = time.perf_counter() - start
                outputs = tokenizer.decode_tgt([hyps[0].tokens if hyps else []
                                                for hyps in found])
                placed = [(holds_inflected if inflect else holds)(o, t)
                          for o, own in zip(outputs, terms) for t in own]
                kept = [holds(o, w) for o, own in zip(outputs, wanted) for w in own]
                rows.append({
                    "run": str(run), "setting": name, "search": search, "terms": len(placed),
                    "terms_placed": round(100 * sum(placed) / max(len(placed), 1), 1),
                    "reference_words": round(100 * sum(kept) / max(len(kept), 1), 1),
                    "bleu_plain": round(sacrebleu.corpus_bleu(plain, [references]).score, 2),
                    "bleu": round(sacrebleu.corpus_bleu(outputs, [references]).score, 2),
                    "seconds_plain": round(plain_seconds, 1), "seconds": round(seconds, 1),
                    "examples": [(s, t, o) for s, t, o in zip(sources, terms, outputs)
                                 if t][:3]})
                print(rows[-1], flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    return markdown_table(
        ["run", "terms", "search", "count", "placed", "reference's words", "BLEU without",
         "BLEU with", "seconds without", "seconds with"],
        [[r["run"], r["setting"], r["search"], r["terms"], f"{r['terms_placed']:.1f}%",
          f"{r['reference_words']:.1f}%", r["bleu_plain"], r["bleu"], r["seconds_plain"],
          r["seconds"]] for r in rows])


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("runs", type=Path, nargs="+", help="run directories of the pair")
    parser.add_argument("--pair", choices=PAIRS, default="en-de",
                        help="the language pair (en-de)")
    add_data_option(parser)
    parser.add_argument("--sentences", type=int, default=1000,
                        help="the first N of test_2016_flickr (default: all 1,000)")
    parser.add_argument("--json", type=Path, help="also write the table here")
    args = parser.parse_args()
    report_table(lambda: measure(args.runs, args.data, args.sentences, args.pair), args.json,
                 markdown)


if __name__ == "__main__":
    main()
