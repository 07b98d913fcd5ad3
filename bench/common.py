"""What the benchmarks share: paths, the Multi30k corpus, the JoeyNMT peer (bench/peers/),
process memory helpers, and the targets `bench.all` judges the headline figures against.

The benchmarks are modules of the `bench` package, run from the repository root:
`python -m bench.speed`, `python -m bench.all`, and so on.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from string import Template

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
PEERS = ROOT / "bench" / "peers"

# Multi30k task 1, in the folder that `nmt data fetch multi30k` fills by default; the
# benchmarks read English -> German (bench.quality also en-fr and en-cs, with --pair).
MULTI30K = ROOT / "data" / "multi30k"


def multi30k_files(pair: str = "en-de") -> tuple[str, ...]:
    """The file names of one Multi30k pair (train, val, test_2016_flickr), e.g. en-fr."""
    return tuple(f"{split}.{lang}.gz" for split in ("train", "val", "test_2016_flickr")
                 for lang in pair.split("-"))


MIRROR_VARIABLE = "NMT_MULTI30K_MIRROR"  # a local folder to copy Multi30k from, if set

THREADS = 2  # every CPU comparison gives both sides 2 threads

# nmt's side of the reference settings (bench/peers/README.md): Config() defaults are the
# reference Transformer; "transformer-bf16" and "gru-luong" are nmt's own variants.
NMT_REFERENCE = {
    "transformer": {},
    "transformer-bf16": {"train.precision": "bf16"},
    "gru-bahdanau": {"model.arch": "gru", "model.attention": "additive",
                     "train.schedule": "constant"},
    "gru-luong": {"model.arch": "gru", "model.attention": "dot", "train.schedule": "constant"},
}

JOEYNMT_VENV = OUT / "joeynmt-venv"
JOEYNMT_CONFIGS = {"transformer": PEERS / "joeynmt-transformer.yaml",
                   "gru-bahdanau": PEERS / "joeynmt-gru.yaml"}
JOEYNMT_INSTALL = (["torch==2.13.0"],  # in this order: JoeyNMT must find this torch
                   ["joeynmt==2.3.0", "importlib_metadata", "sentencepiece==0.2.0"])

# The targets of the headline figures: `figure` as bench.all names it, met when
# `measured <comparison> value`. `full_run`: stated for the full run only, so bench-quick
# shows it without judging. Figures without a row here are shown with no target.
TARGETS = [
    {"figure": "training tok/s, transformer-bf16, vs JoeyNMT", "comparison": ">=",
     "value": 4.0, "unit": "x"},
    {"figure": "training tok/s, transformer, vs JoeyNMT", "comparison": ">=", "value": 4.0,
     "unit": "x"},
    *({"figure": f"training tok/s, transformer {precision}, vs fastest peer",
       "comparison": ">=", "value": 1.5, "unit": "x"} for precision in ("fp32", "bf16")),
    {"figure": "training tok/s, gru-bahdanau, vs JoeyNMT", "comparison": ">=",
     "value": 1.5, "unit": "x"},
    {"figure": "training tok/s, gru-luong, vs JoeyNMT", "comparison": ">=",
     "value": 3.0, "unit": "x"},
    *({"figure": f"training peak RSS, {run}, vs JoeyNMT", "comparison": "<=", "value": 0.5,
       "unit": "x"} for run in NMT_REFERENCE),
    {"figure": "decoding sent/s, transformer greedy, vs JoeyNMT", "comparison": ">=",
     "value": 3.0, "unit": "x", "full_run": "1,000 sentences"},
    {"figure": "decoding sent/s, transformer beam5, vs JoeyNMT", "comparison": ">=",
     "value": 5.0, "unit": "x", "full_run": "1,000 sentences"},
    {"figure": "test_2016_flickr BLEU, multi30k-transformer, beam 5", "comparison": ">=",
     "value": 38.5, "unit": ""},
    {"figure": "test_2016_flickr BLEU, multi30k-gru, beam 5", "comparison": ">=",
     "value": 35.0, "unit": ""},
    {"figure": "test_2016_flickr BLEU after 20 minutes, multi30k-transformer, beam 5",
     "comparison": ">=", "value": 36.0, "unit": ""},
    {"figure": "BLEU after 20 minutes, nmt ahead of the best peer", "comparison": ">",
     "value": 0.0, "unit": ""},
    *({"figure": f"BLEU lost to --quantize int8, {preset}", "comparison": "<=", "value": 0.5,
       "unit": ""} for preset in ("multi30k-transformer", "multi30k-gru")),
    {"figure": "translate: RSS growth over a 100,000-line stream", "comparison": "<",
     "value": 100, "unit": " MB"},
    {"figure": "training peak RSS from prepared files, 100x the pairs", "comparison": "<=",
     "value": 20, "unit": "%"},
]


def commit_id() -> str:
    """The commit the benchmarks run at, "-dirty" when tracked files have changed."""
    return subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"],
                          capture_output=True, text=True, cwd=ROOT).stdout.strip() or "?"


# What a benchmark measures: the code and its dependencies, not the notes beside them.
MEASURED = ("nmt_cli", "bench", "pyproject.toml", ":(exclude)bench/*.md")


def measured_code(root: Path = ROOT) -> str:
    """The last commit that changed what the benchmarks measure (MEASURED), "-dirty" when
    that has changes not committed. A commit that only records figures leaves it as it was,
    so a measurement cut short can go on after one."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args, "--", *MEASURED], capture_output=True, text=True,
                              cwd=root).stdout.strip()
    last = git("log", "-1", "--format=%h", "--abbrev=7") or "?"
    return last + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def write_json(path: Path, data: object) -> None:
    """Write `data` to `path` whole or not at all (a temporary file renamed over it), so that
    a run cut short leaves the last complete record. nmt_cli.files does the same for nmt, but
    importing nmt_cli sets its own settings in this process's environment, which the peers
    started from here would inherit."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n")
    temporary.replace(path)


def new_parser(module: str, doc: str) -> argparse.ArgumentParser:
    """The command line parser of a benchmark module, named as it is run, described by the
    first paragraph of its docstring."""
    return argparse.ArgumentParser(prog=f"python -m {module}",
                                   description=" ".join(doc.strip().split("\n\n")[0].split()))


def report_table(compute, json_path: Path | None, markdown) -> None:
    """Run `compute()` on the benchmark's threads (nmt's one-line errors, such as a directory
    that is not a run, end the command with them), write what it gives to `json_path` if
    asked, and print it as `markdown` renders it."""
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    from nmt_cli.errors import UserError

    try:
        result = compute()
    except UserError as e:
        sys.exit(f"error: {e}")
    if json_path:
        write_json(json_path, result)
    print("\n" + markdown(result))


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A Markdown table: the header, its rule, and a line per row of cells."""
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(map(str, cells)) + " |" for cells in lines)


def add_data_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, metavar="DIR",
                        help="the Multi30k folder (default: data/multi30k, fetched on first use; "
                             f"{MIRROR_VARIABLE}=DIR fetches it from a local copy)")


def multi30k_dir(data: Path | None, pair: str = "en-de") -> Path:
    """The Multi30k folder to read, absolute: `data` or data/multi30k. When the pair's files
    are missing, `nmt data fetch multi30k` fills it, from $NMT_MULTI30K_MIRROR when that is set,
    else from the network; if that fails the process exits with one line saying what to do."""
    folder = (data or MULTI30K).resolve()
    if all((folder / name).is_file() for name in multi30k_files(pair)):
        return folder
    command = [sys.executable, "-m", "nmt_cli", "data", "fetch", "multi30k", "--pair", pair,
               "--dest", str(folder)]
    mirror = os.environ.get(MIRROR_VARIABLE)
    if mirror:
        command += ["--mirror", str(Path(mirror).resolve())]
    existed = folder.exists()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if result.returncode == 0:
        print(f"Multi30k: fetched into {folder} from {mirror or 'the network'}", file=sys.stderr,
              flush=True)
        return folder
    if not existed and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()  # leave no empty folder behind
    reason = (result.stderr.strip().splitlines() or ["no message"])[-1].removeprefix("error: ")
    if not mirror and "download of" in reason:
        raise SystemExit(f"Multi30k is not in {folder} and the network cannot be reached; pass a "
                         f"local copy: {MIRROR_VARIABLE}=DIR (the .gz files) or --data DIR")
    raise SystemExit(f"Multi30k: cannot fetch into {folder}: {reason}")


def two_threads_env() -> dict[str, str]:
    """The environment for a child process of a CPU comparison: two threads, and none of the
    settings that importing nmt made in this process (nmt_cli.before_torch), so that a peer
    runs as its own users run it; an nmt child makes them again."""
    made_by_nmt = getattr(sys.modules.get("nmt_cli.before_torch"), "SET_HERE", ())
    return {**{name: value for name, value in os.environ.items() if name not in made_by_nmt},
            "OMP_NUM_THREADS": str(THREADS)}


def status_mb(pid: int | str, field: str) -> float:
    """A memory line of /proc/PID/status in MB (NaN once the process has exited)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb(pid: int | str = "self") -> float:
    """Peak resident memory (VmHWM) of a process, this one by default."""
    return status_mb(pid, "VmHWM")


def rss_mb(pid: int | str = "self") -> float:
    """Resident memory (VmRSS) of a process now."""
    return status_mb(pid, "VmRSS")


def logged_rate(lines: list[tuple[str, float]], skip: int = 1) -> float:
    """Throughput from a peer's log lines (timestamp "YYYY-mm-dd HH:MM:SS,mmm", tokens per
    second over the window since the line before): each window's rate weighted by its length
    on the clock, so total tokens over total time, the way nmt's and MarianMT's figures are
    made. The first `skip` windows are left out (reading the corpus, first-call costs). The
    median of the windows' rates, used before, is 2.4% higher than this on average (0.98x to
    1.08x) over 55 eole speed runs: it leaves slow windows out, and time spent in them."""
    stamps = [datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() for stamp, _ in lines]
    kept = range(max(skip, 1), len(lines))  # the caller makes sure that some are left
    seconds = [stamps[i] - stamps[i - 1] for i in kept]
    return sum(lines[i][1] * s for i, s in zip(kept, seconds)) / sum(seconds)


def watch_peak_rss(process: subprocess.Popen, interval: float,
                   stop_after: float | None = None) -> float:
    """Wait for `process`, sampling its peak resident memory every `interval` seconds, and
    return the highest sample in MB. With `stop_after`, send it SIGINT once after that many
    seconds (JoeyNMT, through bench/peers/run_joeynmt.py, then saves and ends)."""
    started, peak, stopping = time.monotonic(), 0.0, False
    while process.poll() is None:
        try:
            peak = max(peak, peak_rss_mb(process.pid))
        except OSError:  # it ended between poll() and the read
            pass
        if stop_after is not None and not stopping and time.monotonic() - started > stop_after:
            process.send_signal(signal.SIGINT)
            stopping = True
        time.sleep(interval)
    return peak


def ensure_venv(venv: Path, install: tuple[list[str], ...]) -> Path:
    """The Python of a peer's virtual environment, made on first use: each list of packages
    of `install` in turn (torch first, so that the rest find the CPU build). A marker file
    written last tells a finished environment from one whose installation was cut short,
    which is made again from scratch."""
    python, done = venv / "bin" / "python", venv / "nmt-bench-installed"
    if not done.exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        for packages in install:
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", *packages],
                           check=True)
        done.write_text("\n".join(" ".join(packages) for packages in install) + "\n")
    return python


def ensure_joeynmt() -> Path:
    """The Python of bench/out/joeynmt-venv, made with JoeyNMT 2.3.0 on first use."""
    return ensure_venv(JOEYNMT_VENV, JOEYNMT_INSTALL)


def made_from(folder: Path, corpus: Path) -> None:
    """Make `folder` hold only what was made from `corpus`: emptied when it was made from
    another corpus (or from one it does not name), then marked with this one."""
    source, stamp = str(corpus.resolve()), folder / "corpus.txt"
    if folder.exists() and (not stamp.exists() or stamp.read_text() != source):
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stamp.write_text(source)


def prepare_joeynmt_data(python: Path, corpus: Path) -> dict[str, Path]:
    """JoeyNMT's inputs under bench/out/joeynmt-data: the corpus uncompressed, and the joint
    SentencePiece model with JoeyNMT's ids (unk 0, pad 1, bos 2, eos 3) and vocabulary file.
    They are made again when `corpus` is not the folder they were made from."""
    data = OUT / "joeynmt-data"
    made_from(data, corpus)
    for name in multi30k_files():
        target = data / name.removesuffix(".gz")
        if not target.exists():
            target.write_bytes(gzip.decompress((corpus / name).read_bytes()))
    model, vocab = data / "spm.model", data / "vocab.txt"
    if not model.exists():
        script = (
            "import sys, sentencepiece as spm; d = sys.argv[1]; "
            "spm.SentencePieceTrainer.train(input=f'{d}/train.en,{d}/train.de', "
            "model_prefix=f'{d}/spm', vocab_size=8000, model_type='unigram', "
            "character_coverage=1.0, unk_id=0, pad_id=1, bos_id=2, eos_id=3, minloglevel=2)")
        subprocess.run([str(python), "-c", script, str(data)], check=True)
        pieces = [line.split("\t")[0] for line in
                  (data / "spm.vocab").read_text(encoding="utf-8").splitlines()]
        vocab.write_text("\n".join(pieces) + "\n", encoding="utf-8")
    return {"data": data, "model": model, "vocab": vocab}


def setup_joeynmt(corpus: Path) -> tuple[Path, dict[str, Path]]:
    """JoeyNMT's Python and its prepared inputs (see ensure_joeynmt, prepare_joeynmt_data)."""
    python = ensure_joeynmt()
    return python, prepare_joeynmt_data(python, corpus)


def set_yaml_entry(text: str, dotted: str, value: object) -> str:
    """`section.key: value` in a config of bench/peers (2-space indent): replaced if the
    section has the key, else added at the top of the section."""
    section, key = dotted.split(".")
    lines = text.splitlines()
    start = lines.index(f"{section}:")
    end = next((i for i in range(start + 1, len(lines))
                if lines[i] and not lines[i].startswith(" ")), len(lines))
    entry = f"  {key}: {value}"
    found = [i for i in range(start + 1, end) if re.match(rf"  {key}:", lines[i])]
    if found:
        lines[found[0]] = entry
    else:
        lines.insert(start + 1, entry)
    return "\n".join(lines) + "\n"


def joeynmt_config(family: str, files: dict[str, Path], model_dir: Path,
                   changes: dict[str, object] | None = None) -> str:
    """The text of a JoeyNMT config from bench/peers, filled in, with `changes` such as
    {"training.validation_freq": 100000} applied."""
    text = Template(JOEYNMT_CONFIGS[family].read_text()).substitute(
        DATA=files["data"], SPM_MODEL=files["model"], SPM_VOCAB=files["vocab"],
        MODEL_DIR=model_dir)
    for dotted, value in (changes or {}).items():
        text = set_yaml_entry(text, dotted, value)
    return text


def joeynmt_command(python: Path, *arguments: str) -> list[str]:
    """A JoeyNMT command (train, test, translate) through bench/peers/run_joeynmt.py."""
    return [str(python), str(PEERS / "run_joeynmt.py"), *arguments]


# "2026-12-03 15:39:09,213 - INFO - joeynmt.training - Epoch 1, Step: 10, ..., Tokens per
# Sec: 1028, ...": the time of the line and the target tokens per second since the line before
JOEYNMT_WINDOW = re.compile(r"^(\S+ \S+) - INFO - .*Tokens per Sec:\s*([\d.]+)", re.MULTILINE)


def joeynmt_train_speed(name: str, seconds: int, corpus: Path) -> dict:
    """Train JoeyNMT for `seconds`, then stop it with SIGINT; target tokens over time from its
    windows of 10 steps (`logged_rate`), the first left out."""
    python, files = setup_joeynmt(corpus)
    print(f"joeynmt {name}: training for {seconds} s", file=sys.stderr, flush=True)
    out = Path(tempfile.mkdtemp()) / "model"
    config = out.parent / "config.yaml"
    config.write_text(joeynmt_config(name, files, out, {  # speed only: no validation
        "training.validation_freq": 100000, "training.logging_freq": 10}))
    log = out.parent / "log.txt"
    with open(log, "w") as sink:
        process = subprocess.Popen(joeynmt_command(python, "train", str(config)), stdout=sink,
                                   stderr=subprocess.STDOUT, env=two_threads_env())
        peak = watch_peak_rss(process, 0.5, stop_after=seconds)
    windows = [(stamp, float(rate)) for stamp, rate in JOEYNMT_WINDOW.findall(log.read_text())]
    if len(windows) < 2:
        raise SystemExit(f"JoeyNMT {name}: too few logged windows; see {log}")
    return {"tokens_per_s": logged_rate(windows), "windows": len(windows),
            "peak_rss_mb": peak}
