"""Paragraphs (--split-sentences): what translating a line of several sentences whole costs,
and what translating it a sentence at a time gives back.

Multi30k's lines are single sentences. Here each PER consecutive sentences of
test_2016_flickr make one paragraph, on the source side and on the reference side (a sentence
without a final . ! or ? is given a period on both, so that each paragraph reads as prose).
Each run translates the paragraphs whole and with --split-sentences (beam 5); the table gives
BLEU and chrF against the reference paragraphs, the paragraphs whose translation holds as
many sentences as the source (counted by the same splitter on the translation), and seconds
for the set. A second table gives the splitter alone: the paragraphs of train, val and
test_2016_flickr, in each language, that it cuts exactly where their lines meet (train has
lines of two sentences, which it rightly cuts too many times, and sentences opening in lower
case, which it does not cut from the one before), beside what sentencex 1.0.32 (Wikimedia's
splitter, made for machine translation, in its own environment) cuts exactly.

    python -m bench.paragraphs RUN [RUN ...] [--data DIR] [--per 3] [--no-peer] [--json FILE]
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from .common import (
    OUT,
    ROOT,
    add_data_option,
    ensure_venv,
    markdown_table,
    multi30k_dir,
    new_parser,
    report_table,
)

STOPS = (".", "!", "?")
SENTENCEX_VENV = OUT / "sentencex-venv"
SENTENCEX_INSTALL = (["sentencex==1.0.32"],)


def as_prose(line: str) -> str:
    line = line.strip()
    return line if line.endswith(STOPS) else f"{line}."


def paragraphs(lines: list[str], per: int) -> list[list[str]]:
    """Each `per` consecutive lines, as prose (the last group may be shorter)."""
    return [[as_prose(line) for line in lines[i : i + per]] for i in range(0, len(lines), per)]


def sentencex_split(pairs: list[tuple[str, str]]) -> list[list[str]]:
    """Each (language, paragraph)'s sentences as sentencex 1.0.32 cuts them, in its own
    environment (bench/out/sentencex-venv, made on first use)."""
    python = ensure_venv(SENTENCEX_VENV, SENTENCEX_INSTALL)
    done = subprocess.run([str(python), str(ROOT / "bench" / "peers" / "run_sentencex.py")],
                          input=json.dumps(pairs), capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def splitter_rows(corpus: Path, per: int, peer: bool) -> list[dict]:
    from nmt_cli.data import read_lines
    from nmt_cli.sentences import split_sentences

    rows = []
    for split in ("train", "val", "test_2016_flickr"):
        for lang in ("en", "de", "fr", "cs"):
            path = corpus / f"{split}.{lang}.gz"
            if not path.is_file():
                continue
            groups = paragraphs(read_lines(path), per)
            found = [[s.text for s in split_sentences(" ".join(group))] for group in groups]
            wrong = [(g, f) for f, g in zip(found, groups) if f != g]
            rows.append({"split": split, "language": lang, "paragraphs": len(groups),
                         "exact": len(groups) - len(wrong),
                         "too_few": sum(len(f) < len(g) for g, f in wrong),
                         "too_many": sum(len(f) > len(g) for g, f in wrong),
                         "examples": wrong[:5]})
            if peer:
                theirs = sentencex_split([(lang, " ".join(group)) for group in groups])
                rows[-1]["sentencex_exact"] = sum(t == g for t, g in zip(theirs, groups))
            print(rows[-1], flush=True)
    return rows


def measure(runs: list[Path], data: Path | None, per: int, peer: bool) -> dict:
    import sacrebleu

    from nmt_cli.checkpoint import read_config
    from nmt_cli.config import DecodeConfig
    from nmt_cli.data import read_lines
    from nmt_cli.sentences import split_sentences
    from nmt_cli.translate import Translator

    corpus = multi30k_dir(data)
    rows = []
    for run in runs:
        language = read_config(run)[0].data.tgt_lang
        folder = multi30k_dir(data, f"en-{language}")
        sources = paragraphs(read_lines(folder / "test_2016_flickr.en.gz"), per)
        references = [" ".join(group) for group in paragraphs(
            read_lines(folder / f"test_2016_flickr.{language}.gz"), per)]
        lines = [" ".join(group) for group in sources]
        translator = Translator.from_run(run, "cpu")
        row = {"run": str(run), "language": language, "paragraphs": len(lines)}
        for name, split in (("whole", False), ("split", True)):
            config = DecodeConfig(beam=5, device="cpu", split_sentences=split)
            start = time.perf_counter()
            outputs = translator.translate(lines, config)
            row[f"seconds_{name}"] = round(time.perf_counter() - start, 1)
            row[f"bleu_{name}"] = round(sacrebleu.corpus_bleu(outputs, [references]).score, 2)
            row[f"chrf_{name}"] = round(sacrebleu.corpus_chrf(outputs, [references]).score, 2)
            row[f"kept_{name}"] = sum(len(split_sentences(o)) == len(g)
                                      for o, g in zip(outputs, sources))
            row[f"example_{name}"] = (lines[0], outputs[0])
        rows.append(row)
        print(row, flush=True)
    return {"runs": rows, "splitter": splitter_rows(corpus, per, peer)}


def markdown(result: dict) -> str:
    runs = markdown_table(
        ["run", "into", "paragraphs", "BLEU whole", "BLEU split", "chrF whole", "chrF split",
         "sentences kept, whole", "sentences kept, split", "seconds whole", "seconds split"],
        [[r["run"], r["language"], r["paragraphs"], r["bleu_whole"], r["bleu_split"],
          r["chrf_whole"], r["chrf_split"], r["kept_whole"], r["kept_split"],
          r["seconds_whole"], r["seconds_split"]] for r in result["runs"]])
    splitter = markdown_table(
        ["set", "language", "paragraphs", "cut exactly", "too few cuts", "too many cuts",
         "sentencex: cut exactly"],
        [[r["split"], r["language"], r["paragraphs"], r["exact"], r["too_few"], r["too_many"],
          r.get("sentencex_exact", "-")] for r in result["splitter"]])
    return f"{runs}\n\n{splitter}"


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("runs", type=Path, nargs="+",
                        help="run directories that translate English (into de, fr or cs)")
    add_data_option(parser)
    parser.add_argument("--per", type=int, default=3, help="sentences per paragraph (3)")
    parser.add_argument("--no-peer", action="store_true",
                        help="leave out sentencex (installed in bench/out/sentencex-venv)")
    parser.add_argument("--json", type=Path, help="also write the tables here")
    args = parser.parse_args()
    report_table(lambda: measure(args.runs, args.data, args.per, not args.no_peer), args.json,
                 markdown)


if __name__ == "__main__":
    main()
