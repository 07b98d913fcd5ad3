"""Names spelt with characters the training text lacks: how often a run copies them whole.

A name such as "Þórdís" or "Ольга" is copied, not translated. A tokenizer without byte
fallback turns each character it lacks into <unk>, so no translation can hold the name; with
`tokenizer.byte_fallback` such a character is spelt in its UTF-8 bytes, pieces a model can
learn to copy from the rare characters of its training text (those `character_coverage`
leaves out). Each of 30 names (each with at least one character absent from Multi30k's
English and German training text, checked against the corpus) fills each of 5 English
sentences; the table gives, per run, the share of the 150 translations that hold the name
exactly, and the share that hold each of its characters the training text lacks. Beside
them, as a control, 10 names of characters the training text has: how often the run copies
a name at all. Beside them, the share of translations holding the name whole with
`--copy-unknown`, which copies a source word the vocabulary cannot spell into the
translation by the word alignment.

    python -m bench.unseen RUN [RUN ...] [--data DIR] [--beam 5] [--json FILE]
"""

from __future__ import annotations

import gzip
from pathlib import Path

from .common import add_data_option, markdown_table, multi30k_dir, new_parser, report_table

NAMES = ["Łukasz", "Małgorzata", "Żaneta", "Wojciech Świątek", "Ørjan", "Þórdís", "Guðrún",
         "Ægir", "Çağlar", "Şükrü", "Ğülşen", "İsmail", "Dimitrios Παππάς", "Νίκος", "Ελένη",
         "Иван", "Ольга", "Дмитрий", "Jiří", "Přemysl", "Tomáš Čech", "Ľubomír", "Ōtani",
         "Ngô Bảo Châu", "Nguyễn", "Søren", "Ásgeir", "Đorđe", "Mirjana Šćekić", "Ȟaŋȟáŋ"]
SEEN = ["Anna", "Peter", "Maria", "Thomas", "Laura", "Jonas", "Sofia", "Martin", "Clara",
        "David"]  # names of characters the training text has: the control
TEMPLATES = ["{} is riding a bike down the street.", "A woman named {} is sitting on a bench.",
             "{} and a dog are playing in the park.", "A man is holding a sign that says {}.",
             "{} is standing in front of a large building."]


def unseen_characters(corpus: Path, names: list[str]) -> dict[str, set[str]]:
    """Each name's characters that Multi30k's English and German training text lacks."""
    seen: set[str] = set()
    for language in ("en", "de"):
        with gzip.open(corpus / f"train.{language}.gz", "rt", encoding="utf-8") as lines:
            for line in lines:
                seen.update(line)
    return {name: set(name) - seen for name in names}


def percent(count: int, total: int) -> float:
    return round(100 * count / total, 1)


def copies(runs: list[Path], data: Path | None, beam: int) -> list[dict]:
    from nmt_cli.config import DecodeConfig
    from nmt_cli.translate import Translator

    corpus = multi30k_dir(data)
    unseen = unseen_characters(corpus, NAMES)
    if not all(unseen.values()) or any(unseen_characters(corpus, SEEN).values()):
        raise SystemExit("a name of NAMES has no unseen character, or one of SEEN has")
    pairs = [(name, template.format(name)) for template in TEMPLATES for name in NAMES]
    control = [(name, template.format(name)) for template in TEMPLATES for name in SEEN]
    rows = []
    for run in runs:
        translator = Translator.from_run(run, "cpu")
        outputs = translator.translate([line for _, line in pairs + control],
                                       DecodeConfig(beam=beam))
        ours, theirs = outputs[: len(pairs)], outputs[len(pairs) :]
        copying = [hyps[0].text for _, hyps in translator.translate_nbest_stream(
            [line for _, line in pairs], DecodeConfig(beam=beam), copy_unknown=True)]
        whole = sum(name in output for (name, _), output in zip(pairs, ours))
        copied = sum(name in output for (name, _), output in zip(pairs, copying))
        characters = sum(unseen[name] <= set(output) for (name, _), output in zip(pairs, ours))
        seen = sum(name in output for (name, _), output in zip(control, theirs))
        rows.append({"run": str(run), "byte_fallback": translator.run.config.tokenizer
                     .byte_fallback, "sentences": len(pairs),
                     "name_copied": percent(whole, len(pairs)),
                     "name_copied_copy_unknown": percent(copied, len(pairs)),
                     "unseen_characters_kept": percent(characters, len(pairs)),
                     "seen_name_copied": percent(seen, len(control)), "examples": ours[:3],
                     "examples_copy_unknown": copying[:3]})
        print(rows[-1], flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    return markdown_table(
        ["run", "byte fallback", "sentences", "name copied whole",
         "name copied whole, --copy-unknown", "its unseen characters kept",
         "control: a name of seen characters copied"],
        [[r["run"], r["byte_fallback"], r["sentences"], f"{r['name_copied']:.1f}%",
          f"{r['name_copied_copy_unknown']:.1f}%",
          f"{r['unseen_characters_kept']:.1f}%", f"{r['seen_name_copied']:.1f}%"]
         for r in rows])


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("runs", type=Path, nargs="+", help="English-German run directories")
    add_data_option(parser)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the table here")
    args = parser.parse_args()
    report_table(lambda: copies(args.runs, args.data, args.beam), args.json, markdown)


if __name__ == "__main__":
    main()
