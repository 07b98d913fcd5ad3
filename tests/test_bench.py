"""The benchmark scripts run, on small data (smoke tests: no timing is checked)."""

from __future__ import annotations

import gzip
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nmt_cli.config import DecodeConfig

from conftest import NEEDS_ONEDNN, ROOT, WITH_AND_WITHOUT_ONEDNN, read_sample


@pytest.fixture(scope="module")
def multi30k_layout(tmp_path_factory) -> Path:
    """The sample corpus under Multi30k's file names, as the benchmarks read it."""
    folder = tmp_path_factory.mktemp("multi30k")
    for split, name, count in (("train", "train", 600), ("val", "val", 40),
                               ("test", "test_2016_flickr", 40)):
        for lang in ("en", "de"):
            text = "".join(f"{line}\n" for line in read_sample(split, lang, count))
            (folder / f"{name}.{lang}.gz").write_bytes(gzip.compress(text.encode()))
    return folder


@pytest.mark.slow
def test_gpu_benchmark_runs_end_to_end_on_a_cpu(multi30k_layout, tmp_path):
    out = tmp_path / "gpu.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.gpu", "--device", "cpu", "--steps", "2", "--sentences",
         "16", "--preset", "transformer", "--vocab", "300", "--data", str(multi30k_layout),
         "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| transformer, bf16 |" in result.stdout and "greedy" in result.stdout
    figures = json.loads(out.read_text())
    assert figures["train"]["transformer, bf16"]["tokens_per_s"] > 0
    assert figures["decode"]["greedy"] > 0 and figures["decode"]["beam5"] > 0


@pytest.mark.slow
def test_serve_benchmark_runs_end_to_end(multi30k_layout, small_corpus, tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    run = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "nmt_cli", "train", "--data", str(small_corpus),
                    "--run", str(run), "--max-steps", "2", "--set", "model.d_model=32",
                    "--set", "model.d_ff=64", "--set", "tokenizer.vocab_size=300"],
                   check=True, capture_output=True, timeout=300)
    out = tmp_path / "serve.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.serve", "--run", str(run), "--clients", "3",
         "--sentences", "12", "--alone", "4", "--beams", "1", "--data", str(multi30k_layout),
         "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| beam 1 |" in result.stdout and "3 clients" in result.stdout
    figures = json.loads(out.read_text())["results"]["beam 1"]
    assert figures["clients"]["sentences"] == 12 and figures["ratio"] > 0


@pytest.mark.slow
def test_ctranslate2_benchmark_runs_end_to_end(multi30k_layout, tmp_path):
    pytest.importorskip("ctranslate2")
    run = tmp_path / "run"
    nmt_train = [sys.executable, "-m", "nmt_cli", "train", "--data", str(multi30k_layout),
                 "--run", str(run), "--max-steps", "3", "--set", "model.d_model=32",
                 "--set", "model.d_ff=64", "--set", "tokenizer.vocab_size=300"]
    assert subprocess.run(nmt_train, cwd=ROOT, capture_output=True, timeout=300).returncode == 0
    out = tmp_path / "ct2.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.ct2", "--run", str(run), "--data", str(multi30k_layout),
         "--quick", "--repeats", "1", "--out", str(tmp_path / "exports"), "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| ctranslate2 float32 |" in result.stdout
    figures = json.loads(out.read_text())["results"]
    assert set(figures) == {"nmt torch", "ctranslate2 float32", "ctranslate2 int8"}
    for search in ("greedy", "beam5"):
        assert figures["ctranslate2 float32"][search]["sentences"] == 40
        assert figures["ctranslate2 float32"][search]["same_as_nmt"] >= 39


def speed_figures(**peers: float) -> dict[str, dict]:
    """bench.speed's results: nmt at 3,000 (fp32) and 6,000 (bf16) tok/s, and `peers`."""
    results = {f"nmt {run} ({batches} batches)": {
        "tokens_per_s": 6000.0 if "bf16" in run else 3000.0, "peak_rss_mb": 1000.0}
        for run in ("transformer", "transformer-bf16", "gru-bahdanau", "gru-luong")
        for batches in ("nmt", "joeynmt")}
    names = {"joeynmt": "joeynmt transformer", "eole": "eole transformer (fp32)",
             "eole_bf16": "eole transformer (bf16)",
             "marian": "marian transformer (hf batches, fp32)",
             "marian_tokens": "marian transformer (tokens batches, fp32)"}
    for key, tokens_per_s in peers.items():
        results[names[key]] = {"tokens_per_s": tokens_per_s, "peak_rss_mb": 2000.0}
    return results


def test_each_precision_is_compared_with_its_fastest_peer_at_its_own_batching():
    from bench.all import headline

    # MarianMT with nmt's batch composition is faster than either peer at its own batching;
    # it is shown, but the comparison is with the peers as their users run them.
    rows = {row[0]: row for row in headline({"speed": speed_figures(
        joeynmt=700.0, eole=2400.0, eole_bf16=3000.0, marian=1300.0, marian_tokens=2900.0)})}
    fp32 = rows["training tok/s, transformer fp32, vs fastest peer"]
    assert fp32[1] == "1.25x (eole transformer (fp32))" and fp32[3] is False
    bf16 = rows["training tok/s, transformer bf16, vs fastest peer"]
    assert bf16[1] == "2.00x (eole transformer (bf16))" and bf16[3] is True
    assert rows["training tok/s, transformer, vs JoeyNMT"][1:] == ("4.29x", ">= 4x", True)


def test_the_compiled_transformer_is_compared_with_the_same_fastest_peer():
    from bench.all import headline

    figures = speed_figures(eole=2400.0, eole_bf16=3000.0)
    figures["nmt transformer --compile (nmt batches)"] = {"tokens_per_s": 3600.0,
                                                          "peak_rss_mb": 1100.0}
    rows = {row[0]: row for row in headline({"speed": figures})}
    assert rows["training tok/s, transformer fp32 --compile, vs fastest peer"][1] == \
        "1.50x (eole transformer (fp32))"
    assert rows["training tok/s, transformer fp32, vs fastest peer"][1] == \
        "1.25x (eole transformer (fp32))"
    assert "training tok/s, transformer bf16 --compile, vs fastest peer" not in rows  # not run


def test_no_peer_measured_in_a_precision_gives_no_comparison():
    from bench.all import headline

    figures = [row[0] for row in headline({"speed": speed_figures(joeynmt=700.0)})]
    assert "training tok/s, transformer fp32, vs fastest peer" in figures  # JoeyNMT is fp32
    assert "training tok/s, transformer bf16, vs fastest peer" not in figures


def test_the_matrix_product_ceiling_is_shown_beside_the_fastest_peer_without_a_target():
    from bench.all import headline

    figures = speed_figures(eole=2400.0, eole_bf16=3000.0, marian=1300.0)
    figures["nmt transformer (nmt batches)"].update(
        product_share=0.8, products_only_tokens_per_s=3600.0, product_gflops_per_s=120.0,
        products_alone_gflops_per_s=150.0)
    rows = {row[0]: row for row in headline({"speed": figures})}
    row = rows["training tok/s, transformer fp32, matrix products alone, vs fastest peer"]
    assert row[1:] == ("1.50x (eole transformer (fp32))", "-", None)
    assert "training tok/s, transformer bf16, matrix products alone, vs fastest peer" not in rows
    row = rows["training GFLOP/s of the matrix products, transformer fp32, vs the same products "
               "alone"]
    assert row[1:] == ("0.80x (120 of 150)", "-", None)


def test_the_table_says_how_fast_the_products_ran_beside_the_same_products_alone(capsys):
    from bench.speed import print_table

    figures = speed_figures(eole=2400.0)
    figures["nmt transformer (nmt batches)"].update(
        product_share=0.75, products_only_tokens_per_s=4000.0, product_gflops_per_s=120.0,
        products_alone_gflops_per_s=160.0)
    print_table(figures)
    lines = capsys.readouterr().out.splitlines()
    assert ("nmt transformer (nmt batches): matrix products 75% of a step; with nothing else "
            "timed 4,000 tok/s, 1.67x eole transformer (fp32)") in lines
    assert ("nmt transformer (nmt batches): matrix products at 120 GFLOP/s, 75% of the same "
            "products run alone (160 GFLOP/s)") in lines
    assert not any("transformer-bf16 (nmt batches): matrix" in line for line in lines)


@pytest.mark.parametrize("onednn", WITH_AND_WITHOUT_ONEDNN)
def test_a_profiled_step_finds_its_matrix_products(multi30k_layout, tmp_path, monkeypatch,
                                                    onednn):
    from bench.speed import matrix_product_time
    from nmt_cli import devices
    from nmt_cli.config import apply_overrides, preset
    from nmt_cli.training import Trainer, prepare_run_dir

    monkeypatch.setattr(devices, "onednn_float32", lambda: onednn)  # linear layers: AMD's way

    config = apply_overrides(preset("transformer"), {
        "data.data_dir": str(multi30k_layout), "tokenizer.vocab_size": 250,
        "model.d_model": 32, "model.d_ff": 64, "train.batch_tokens": 600})
    trainer = Trainer(config, prepare_run_dir(tmp_path / "run"), lambda event: None)
    figures = matrix_product_time(trainer, trainer.epoch_batches(0)[:2])
    # Products take part of the wall time, never all of it (the rest: the loss, norms, the
    # optimizer); a share of 0 would mean the profiler names them otherwise.
    assert 0.0 < figures["product_share"] < 1.0
    assert figures["products_only_tokens_per_s"] > 0.0
    # The profiler counts the products' floating-point operations (none if it was not asked
    # to), and the same products run again alone, shape by shape, at some speed.
    assert figures["product_gflops_per_s"] > 0.0
    assert figures["products_alone_gflops_per_s"] > 0.0
    assert matrix_product_time(trainer, []) == {}


def test_the_speed_worker_runs_past_an_epoch_and_for_a_time(multi30k_layout, monkeypatch):
    from bench import speed

    tiny = {"tokenizer.vocab_size": 250, "model.d_model": 32, "model.d_ff": 64,
            "train.batch_tokens": 600}
    monkeypatch.setattr(speed, "NMT_REFERENCE", {"tiny": tiny})
    figures = speed.nmt_worker("tiny", 60, "nmt", multi30k_layout)
    assert figures["steps"] == 60 and figures["epoch_batches"] < 60 - 3  # on into epoch 2
    assert figures["tokens_per_s"] > 0 and figures["product_share"] > 0  # profiled after
    # for a time: at least the one step begun before the time is up, however short
    assert speed.nmt_worker("tiny", 0, "nmt", multi30k_layout, seconds=1e-6)["steps"] == 1


def test_a_profiled_product_runs_again_alone_with_its_own_shapes(monkeypatch):
    from types import SimpleNamespace

    import torch

    from bench.speed import run_alone

    calls = []
    recorded = torch.addmm
    monkeypatch.setattr(torch, "addmm", lambda *inputs: calls.append(
        [(tuple(x.shape), x.dtype) for x in inputs]) or recorded(*inputs))
    # as the profiler records addmm: bias, the two matrices, then the scalars beta and alpha;
    # in a compiled step, the output tensor too
    for shapes in ([[3], [2, 4], [4, 3], [], []], [[3], [2, 4], [4, 3], [2, 3]]):
        calls.clear()
        event = SimpleNamespace(key="aten::addmm", input_shapes=shapes, count=2)
        assert run_alone(event, "bf16") > 0.0
        assert calls == [[((3,), torch.bfloat16), ((2, 4), torch.bfloat16),
                          ((4, 3), torch.bfloat16)]] * 3  # once to warm up, then `count` times


@NEEDS_ONEDNN
def test_a_onednn_linear_layer_counts_its_operations_and_runs_again_alone():
    from types import SimpleNamespace

    from bench.speed import ONEDNN_LINEAR, product_flops, run_alone

    # as the profiler records it: x (5, 4), W (3, 4), no bias, then the fused activation's
    # name and arguments; it counts no operations itself
    event = SimpleNamespace(key=ONEDNN_LINEAR, input_shapes=[[5, 4], [3, 4], [], [], [], []],
                            count=2, flops=0)
    assert product_flops(event) == 2 * (2 * 5 * 4 * 3)
    assert run_alone(event, "fp32") > 0.0


def test_an_in_place_product_sum_counts_its_operations_and_runs_again_alone():
    from types import SimpleNamespace

    from bench.speed import IN_PLACE, PRODUCTS, product_flops, run_alone

    # as the profiler records C.addmm_(A, B): C (3, 5), A (3, 4), B (4, 5), then the scalars
    # beta and alpha; it counts no operations itself
    event = SimpleNamespace(key=IN_PLACE, input_shapes=[[3, 5], [3, 4], [4, 5], [], []],
                            count=2, flops=0)
    assert IN_PLACE in PRODUCTS
    assert product_flops(event) == 2 * (2 * 3 * 4 * 5)
    assert run_alone(event, "fp32") > 0.0


def test_rounds_run_in_alternating_order_and_each_gives_a_ratio(monkeypatch, tmp_path):
    from bench import speed

    # nmt fp32 and eole fp32 in three rounds: 1.5x, 1.5x, then 1.0x in a round where only
    # nmt ran slow. The median of the rounds' ratios is 1.5x; the ratio of the medians
    # (2,000 against 2,000) would have said 1.0x.
    figures = {"nmt transformer": [3000.0, 1500.0, 2000.0], "nmt transformer-bf16": [4000.0] * 3,
               "eole fp32": [2000.0, 1000.0, 2000.0], "eole bf16": [2000.0] * 3}
    calls = []

    def measured(name: str) -> dict:
        calls.append(name)
        speeds, index = figures.get(name, [500.0]), calls.count(name) - 1
        profiled = {"product_gflops_per_s": [150.0, 130.0, 110.0][index % 3]}
        return {"tokens_per_s": speeds[index % len(speeds)], "peak_rss_mb": 1000.0 + len(calls),
                **(profiled if name == "nmt transformer" else {})}

    windows = {}  # nmt's runs: how long each trained, in steps or seconds

    def run_nmt(name, steps, batching, corpus, seconds=0):
        row = f"nmt {name}" if batching == "nmt" else f"nmt {name} {batching}"
        windows[row] = "seconds" if seconds else "steps"
        assert seconds in (0, 150) and steps == 15
        return measured(row)

    monkeypatch.setattr(speed, "run_nmt", run_nmt)
    monkeypatch.setattr(speed.peer_eole, "train_speed",
                        lambda seconds, precision, corpus: measured(f"eole {precision}"))
    results = speed.measure(["eole"], 15, 150, 3, tmp_path)
    one_round = ["nmt transformer", "eole fp32", "nmt transformer-bf16", "eole bf16"]
    assert calls[:12] == one_round + one_round[::-1] + one_round
    assert calls.count("nmt transformer") == 3  # the rows run once are not run again
    # nmt trains as long as its peers where they are compared, a number of steps elsewhere
    assert windows["nmt transformer"] == windows["nmt transformer-bf16"] == "seconds"
    assert windows["nmt gru-luong"] == windows["nmt transformer joeynmt"] == "steps"
    fp32 = speed.versus_fastest(results, "nmt transformer (nmt batches)", "fp32")
    assert fp32 == (1.5, "eole transformer (fp32)", [1.5, 1.5, 1.0])
    assert speed.shown_versus(fp32) == \
        "1.50x (eole transformer (fp32); rounds 1.50x / 1.50x / 1.00x)"
    row = results["nmt transformer (nmt batches)"]
    assert row["tokens_per_s"] == 2000.0 and row["peak_rss_mb"] == 1009.0
    # the profiled figures too: the median of the rounds, not the last round's
    assert row["product_gflops_per_s"] == 130.0
    assert row["product_gflops_per_s_rounds"] == [150.0, 130.0, 110.0]
    assert list(results)[-2:] == ["eole transformer (bf16)", "eole transformer (fp32)"]


def test_a_speed_measurement_cut_short_goes_on_from_its_last_whole_round(monkeypatch,
                                                                          tmp_path):
    from bench import speed

    calls, stop_at = [], [6]  # cut short in the second round, after two of its runs

    def measured(name: str, *args, **kwargs) -> dict:
        if len(calls) == stop_at[0]:
            raise KeyboardInterrupt
        calls.append(name)
        return {"tokens_per_s": 1000.0 + len(calls), "peak_rss_mb": 500.0}

    monkeypatch.setattr(speed, "run_nmt", lambda name, steps, batching, *a: measured(
        f"nmt {name}" if batching == "nmt" else f"nmt {name} {batching}"))
    monkeypatch.setattr(speed.peer_eole, "train_speed",
                        lambda seconds, precision, corpus: measured(f"eole {precision}"))
    monkeypatch.setattr(speed, "measured_code", lambda: "abc1234")
    progress = tmp_path / "speed.progress.json"
    with pytest.raises(KeyboardInterrupt):
        speed.measure(["eole"], 15, 150, 3, tmp_path, progress)
    assert json.loads(progress.read_text())["rounds_done"] == 1

    one_round = ["nmt transformer", "eole fp32", "nmt transformer-bf16", "eole bf16"]
    first, calls[:], stop_at[0] = calls[:4], [], -1
    results = speed.measure(["eole"], 15, 150, 3, tmp_path, progress)
    assert first == one_round
    assert calls[:8] == one_round[::-1] + one_round  # rounds 2 and 3, whole, in their order
    assert results["eole transformer (fp32)"]["rounds"] == [1002.0, 1003.0, 1006.0]
    once = calls[8:]  # the rows run once; those measured in the rounds are not among them
    assert "nmt transformer joeynmt" in once and "nmt transformer" not in once

    # the rows run once are kept too; another setting or other code starts afresh
    calls.clear()
    speed.measure(["eole"], 15, 150, 3, tmp_path, progress)
    assert calls == []
    monkeypatch.setattr(speed, "measured_code", lambda: "def5678")
    speed.measure(["eole"], 15, 150, 3, tmp_path, progress)
    assert calls[:4] == one_round


def test_the_measured_code_changes_with_the_code_not_with_the_figures(tmp_path):
    """A measurement cut short goes on after a commit that only records figures, and starts
    afresh after one that changes what it measures (or with changes not committed)."""
    from bench import common

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=n", "-c", "user.email=n@n", *args],
                       cwd=tmp_path, check=True, capture_output=True)

    def commit(path: str, text: str) -> None:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
        git("add", path)
        git("commit", "-q", "-m", path)

    git("init", "-q")
    commit("nmt_cli/model.py", "one")
    commit("bench/RESULTS.md", "figures")
    code = common.measured_code(tmp_path)
    assert len(code) == 7 and common.measured_code(ROOT) != "?"
    commit("bench/RESULTS.md", "more figures")
    commit("README.md", "a note")
    assert common.measured_code(tmp_path) == code
    (tmp_path / "bench" / "speed.py").write_text("changed")
    git("add", "bench/speed.py")
    assert common.measured_code(tmp_path) == code + "-dirty"
    git("commit", "-q", "-m", "speed")
    assert common.measured_code(tmp_path) not in (code, code + "-dirty")


def test_eole_log_windows_and_config_entries():
    from bench.peer_eole import WINDOW, set_entry

    line = ("[2026-12-01 02:50:01,123 INFO] Step 15/1000000; acc: 12.3; ppl: 900.1; xent: 6.8; "
            "aux: 0.000; mtp: 0.000; attn_ent: 0.000; lr: 7.59e-06; sents:     893; "
            "bsz: 1496/1593/60; 3010/3243 tok/s;     12 sec;")  # eole 0.6.4's format
    assert WINDOW.findall(line) == [("2026-12-01 02:50:01,123", "3010", "3243")]
    text = "seed: 42\ntraining:\n  valid_steps: 80\n  batch_size: 4096\n"
    changed = set_entry(set_entry(text, "training.valid_steps", 1000000), "report_every", 1)
    assert changed == ("report_every: 1\nseed: 42\ntraining:\n  valid_steps: 1000000\n"
                       "  batch_size: 4096\n")


def test_a_peers_logged_windows_count_for_their_time():
    from bench.common import JOEYNMT_WINDOW, logged_rate

    log = ("2026-12-03 23:59:58,500 - INFO - joeynmt.training - Epoch   1, Step:       10, "
           "Batch Loss:     7.27, Batch Acc: 0.08, Tokens per Sec:     9999, Lr: 0.0005\n"
           "2026-12-03 23:59:59,500 - INFO - joeynmt.training - Epoch   1, Step:       20, "
           "Batch Loss:     5.96, Batch Acc: 0.06, Tokens per Sec:      1000, Lr: 0.0005\n"
           "2026-12-04 00:00:02,500 - INFO - joeynmt.training - Epoch   1, Step:       30, "
           "Batch Loss:     5.31, Batch Acc: 0.06, Tokens per Sec:      2000, Lr: 0.0005\n")
    windows = [(stamp, float(rate)) for stamp, rate in JOEYNMT_WINDOW.findall(log)]
    assert [rate for _, rate in windows] == [9999.0, 1000.0, 2000.0]
    # 1,000 tokens in the second, 6,000 in the next three (past midnight): 7,000 in 4 s; the
    # first window is left out, and the median of the other two would say 1,500
    assert logged_rate(windows) == pytest.approx(1750.0)
    assert logged_rate(windows, skip=2) == pytest.approx(2000.0)


def test_the_race_is_won_only_ahead_of_every_peer():
    from bench.all import headline

    race = {"nmt": {"bleu": 36.5}, "eole": {"bleu": 30.25}, "marian": {"bleu": 36.75},
            "joeynmt": {"bleu": 0.5}}
    rows = {row[0]: row for row in headline({"race": race})}
    assert rows["BLEU after 20 minutes, nmt ahead of the best peer"][1:] == (
        "-0.25 (marian 36.75)", "> 0", False)
    assert rows["test_2016_flickr BLEU after 20 minutes, multi30k-transformer, beam 5"][3]
    race["marian"]["bleu"] = 36.5  # a tie is not a lead
    assert not {row[0]: row for row in headline({"race": race})}[
        "BLEU after 20 minutes, nmt ahead of the best peer"][3]


def test_a_full_run_goes_on_where_it_stopped_keeping_the_parts_that_finished(tmp_path,
                                                                              monkeypatch):
    """bench.all in pieces: a part that fails is run again by --resume, from a clean start,
    and the parts that finished are kept; --parts runs the parts named, again if need be."""
    import bench.all as bench_all

    figures = {"translate_memory": {"lines": 100, "growth_mb": 0.5},
               "shards_memory": {"20": {}, "2000": {}, "growth": 0.05}}
    ran, failing = [], {"race"}
    real_run = subprocess.run

    def fake_run(command, **kwargs):
        if command[:2] != [sys.executable, "-m"]:
            return real_run(command, **kwargs)  # git, for the commit
        name = command[2].removeprefix("bench.")
        ran.append(name)
        json_file = Path(command[command.index("--json") + 1])
        if name in failing:  # cut short, leaving a run behind
            (json_file.parent / name).mkdir()
            (json_file.parent / name / "train.log").write_text("step 1\n")
            return subprocess.CompletedProcess(command, 1)
        json_file.write_text(json.dumps(figures.get(name, {})))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(bench_all.subprocess, "run", fake_run)
    monkeypatch.setattr(bench_all, "OUT", tmp_path)
    monkeypatch.setattr(bench_all, "multi30k_dir", lambda data: tmp_path)

    def bench(*arguments: str) -> int | str:
        monkeypatch.setattr(sys, "argv", ["bench.all", *arguments])
        with pytest.raises(SystemExit) as ended:
            bench_all.main()
        return ended.value.code

    assert bench() == 1
    assert ran == list(bench_all.PARTS)
    (folder,) = tmp_path.glob("all-*")
    record = json.loads((folder / "parts.json").read_text())
    assert {name: part["exit"] for name, part in record["parts"].items()} == {
        name: 1 if name == "race" else 0 for name in bench_all.PARTS}
    assert not json.loads((tmp_path / "bench.json").read_text())["complete"]

    ran.clear()
    failing.clear()
    assert bench("--resume", str(folder)) == 0
    assert ran == ["race"]
    assert (folder / "race.interrupted-1" / "train.log").exists()
    summary = json.loads((tmp_path / "bench.json").read_text())
    assert summary["complete"] and set(summary["parts"]) == set(bench_all.PARTS)
    assert len(set(summary["commits"].values())) == 1

    ran.clear()
    assert bench("--resume", str(folder), "--parts", "decode") == 0
    assert ran == ["decode"]

    assert "no parts.json" in bench("--resume", str(tmp_path / "elsewhere"))
    assert "a full run; leave out --quick" in bench("--quick", "--resume", str(folder))
    assert "quality not in bench-quick" in bench("--quick", "--parts", "quality")
    assert ran == ["decode"]


def test_peer_inputs_are_made_again_for_another_corpus(tmp_path):
    from bench.common import made_from

    folder, first, second = tmp_path / "prepared", tmp_path / "a", tmp_path / "b"
    made_from(folder, first)
    (folder / "spm.model").write_text("made from a")
    made_from(folder, first)
    assert (folder / "spm.model").exists()  # the same corpus: kept
    made_from(folder, second)
    assert not (folder / "spm.model").exists()
    assert (folder / "corpus.txt").read_text() == str(second.resolve())
    (folder / "corpus.txt").unlink()  # made before folders were marked: made again
    (folder / "spm.model").write_text("made from ?")
    made_from(folder, second)
    assert not (folder / "spm.model").exists()


def test_validation_chooses_between_the_trained_weights_and_their_ema():
    from bench.quality import chosen_weights

    records = [{"kind": "step", "step": 1}, {"kind": "validate", "val_bleu": 30.0},
               {"kind": "validate", "val_bleu": 31.5}]
    assert chosen_weights(records) == ("model.safetensors", 31.5, None)
    records[1]["ema_val_bleu"], records[2]["ema_val_bleu"] = 31.75, 31.0
    assert chosen_weights(records) == ("ema.safetensors", 31.5, 31.75)
    records[1]["ema_val_bleu"] = 31.5  # a tie keeps the trained weights
    assert chosen_weights(records) == ("model.safetensors", 31.5, 31.5)


@pytest.mark.slow
def test_race_runs_end_to_end_for_nmt(multi30k_layout, tmp_path):
    out = tmp_path / "race"
    result = subprocess.run(
        [sys.executable, "-m", "bench.race", "--minutes", "0.1", "--systems", "nmt", "--seed", "7",
         "--set", "model.d_model=32", "--set", "model.d_ff=64", "--data", str(multi30k_layout),
         "--out", str(out), "--json", str(tmp_path / "r.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads((tmp_path / "r.json").read_text())["nmt"]
    assert 0 <= figures["bleu"] <= 100 and "nrefs:1" in figures["signature"]
    config = json.loads((out / "nmt" / "config.json").read_text())["config"]
    assert figures["seed"] == 7 and config["train"]["seed"] == 7
    assert config["model"]["d_model"] == 32 and config["train"]["precision"] == "bf16"
    assert figures["settings"] == ["model.d_model=32", "model.d_ff=64"]
    assert "| nmt (model.d_model=32, model.d_ff=64) |" in result.stdout
    assert len((out / "nmt.test_2016_flickr.de").read_text().splitlines()) == 40


@pytest.mark.slow
def test_quality_trains_and_scores_the_pair_it_is_given(multi30k_layout, tmp_path):
    corpus = tmp_path / "multi30k"
    corpus.mkdir()
    for path in multi30k_layout.iterdir():  # the sample's German under French names: en-fr only
        (corpus / path.name.replace(".de.", ".fr.")).write_bytes(path.read_bytes())
    out = tmp_path / "quality"
    result = subprocess.run(
        [sys.executable, "-m", "bench.quality", "--presets", "multi30k-gru", "--max-time",
         "0.1m", "--pair", "en-fr", "--seed", "7", "--data", str(corpus), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads((out / "quality.json").read_text())["multi30k-gru"]
    assert figures["pair"] == "en-fr" and figures["seed"] == 7
    assert figures["alpha"] == DecodeConfig().alpha
    assert "nrefs:1" in figures["beam5"]["signature"]
    run = out / "multi30k-gru"
    config = json.loads((run / "config.json").read_text())["config"]
    assert config["data"]["tgt_lang"] == "fr" and config["train"]["seed"] == 7
    assert len((run / "test_2016_flickr.beam5.fr").read_text().splitlines()) == 40
    assert "| multi30k-gru | en-fr |" in result.stdout


@pytest.mark.slow
def test_multilingual_compares_one_model_into_three_languages_with_three(multi30k_layout,
                                                                         tmp_path):
    corpus = tmp_path / "multi30k"
    corpus.mkdir()
    for path in multi30k_layout.iterdir():  # the sample's German also under French and Czech
        for language in ("de", "fr", "cs"):
            (corpus / path.name.replace(".de.", f".{language}.")).write_bytes(path.read_bytes())
    out = tmp_path / "multilingual"
    tiny = [arg for setting in ("model.d_model=32", "model.d_ff=64", "tokenizer.vocab_size=300",
                                "train.validate_every=100000") for arg in ("--set", setting)]
    result = subprocess.run(
        [sys.executable, "-m", "bench.multilingual", "--minutes", "0.04", *tiny, "--data",
         str(corpus), "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.loads((out / "en-de" / "config.json").read_text())["config"]
    assert config["model"]["d_model"] == 32 and config["train"]["validate_every"] == 100000
    config = json.loads((out / "en-all" / "config.json").read_text())["config"]
    assert config["data"]["tgt_lang"] == "de,fr,cs" and config["train"]["validate_every"] == 750
    assert config["model"]["d_model"] == 32
    assert config["train"]["max_time"] == pytest.approx(3 * 0.04 * 60)
    figures = json.loads((out / "multilingual.json").read_text())["languages"]
    assert [f["language"] for f in figures] == ["de", "fr", "cs"]
    for language in ("de", "fr", "cs"):
        for run in (f"en-{language}", "en-all"):
            assert len((out / run / f"test_2016_flickr.beam5.{language}").read_text()
                       .splitlines()) == 40
    assert "| cs |" in result.stdout and "p (bootstrap / AR)" in result.stdout


def test_a_peer_runs_without_the_settings_that_nmt_makes_for_itself(monkeypatch):
    import bench.common as common
    from nmt_cli import before_torch

    monkeypatch.setattr(before_torch, "SET_HERE", ("ONEDNN_PRIMITIVE_CACHE_CAPACITY",))
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "32")  # made by nmt on import
    monkeypatch.setenv("LRU_CACHE_CAPACITY", "7")  # the user's own
    env = common.two_threads_env()
    assert "ONEDNN_PRIMITIVE_CACHE_CAPACITY" not in env
    assert env["LRU_CACHE_CAPACITY"] == "7" and env["OMP_NUM_THREADS"] == str(common.THREADS)


def test_a_peer_environment_cut_short_is_made_again(tmp_path, monkeypatch):
    import bench.common as common

    calls, fail = [], {"pip": True}

    def run(command, check):  # venv makes bin/python; the first pip install is cut short
        calls.append(command[-1])
        if command[1:3] == ["-m", "venv"]:
            (Path(command[-1]) / "bin").mkdir(parents=True)
            (Path(command[-1]) / "bin" / "python").touch()
        elif fail.pop("pip", False):
            raise subprocess.CalledProcessError(1, command)

    monkeypatch.setattr(common.subprocess, "run", run)
    venv, install = tmp_path / "peer-venv", (["torch==2.13.0"], ["peer==1.0"])
    with pytest.raises(subprocess.CalledProcessError):
        common.ensure_venv(venv, install)
    (venv / "leftover").touch()
    assert common.ensure_venv(venv, install) == venv / "bin" / "python"
    assert not (venv / "leftover").exists()  # made again from scratch
    assert calls == [str(venv), "torch==2.13.0", str(venv), "torch==2.13.0", "peer==1.0"]
    common.ensure_venv(venv, install)
    assert len(calls) == 5  # finished: nothing is installed again


def test_length_penalty_table_has_a_column_per_run_and_bolds_the_best_mean():
    from bench.length_penalty import markdown

    table = {"a": {"beam 5 alpha 1": 30.0, "beam 5 alpha 1.4": 31.0},
             "b": {"beam 5 alpha 1": 33.0, "beam 5 alpha 1.4": 31.5}}
    lines = markdown(table).splitlines()
    assert lines[0] == "| setting | a | b | mean |"
    assert lines[2] == "| beam 5 alpha 1 | 30.00 | 33.00 | **31.50** |"
    assert lines[3] == "| beam 5 alpha 1.4 | 31.00 | 31.50 | 31.25 |"


def test_length_penalty_decodes_each_runs_own_validation_split(tmp_path, monkeypatch):
    from test_nbest import train_tiny_run

    from bench.length_penalty import val_bleu

    run = train_tiny_run(tmp_path)
    module = importlib.import_module("nmt_cli.evaluation")
    references, real = [], module.evaluate

    def recording(hypotheses, refs, metrics, **options):
        references.append(refs)
        return real(hypotheses, refs, metrics, **options)

    monkeypatch.setattr(module, "evaluate", recording)
    table = val_bleu([run], [(2, 0.0), (2, 1.5)])
    assert list(table[str(run)]) == ["beam 2 alpha 0", "beam 2 alpha 1.5"]
    assert all(0 <= bleu <= 100 for bleu in table[str(run)].values())
    assert references == [read_sample("val", "de", 5)] * 2


def test_prefix_bench_counts_the_next_words_a_run_predicts_on_its_own_split(tmp_path):
    from test_nbest import train_tiny_run

    from bench.prefix import markdown, next_word_accuracy, predicts
    from nmt_cli.translate import Translator

    assert predicts("Ein Mann geht .".split(), "Ein Mann läuft .".split(), 1)
    assert not predicts("Ein Mann geht .".split(), "Ein Mann läuft .".split(), 2)
    assert not predicts("Eine Frau".split(), "Ein Mann".split(), 1)  # the word was lengthened
    run = train_tiny_run(tmp_path, test_sentences=30)
    rows = next_word_accuracy(run, "test", 2, 2)
    references = read_sample("test", "de", 30)
    assert [(r["words_given"], r["sentences"]) for r in rows] == [
        (k, sum(len(ref.split()) > k for ref in references)) for k in range(3)]
    plain = Translator.from_run(run, "cpu").translate(read_sample("test", "en", 30),
                                                      DecodeConfig(beam=2))
    first_words = sum(out.split()[:1] == ref.split()[:1] for out, ref in zip(plain, references))
    assert rows[0]["next_word_accuracy"] == rows[0]["without_prefix"] == round(
        100 * first_words / 30, 2)
    second_words = sum(out.split()[1:2] == ref.split()[1:2] for out, ref in zip(plain, references))
    assert rows[1]["without_prefix"] == round(100 * second_words / rows[1]["sentences"], 2)
    assert markdown(rows).splitlines()[2].startswith("| 0 | 30 | ")


def test_length_penalty_names_a_directory_that_is_not_a_run(tmp_path):
    result = subprocess.run([sys.executable, "-m", "bench.length_penalty", str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"error: {tmp_path}: not a run directory (no config.json)"


MIRROR = Path(os.environ.get("NMT_MULTI30K_MIRROR", "/nonexistent"))


@pytest.mark.skipif(not MIRROR.is_dir(), reason="set NMT_MULTI30K_MIRROR to a folder with "
                                               "the Multi30k files")
def test_every_name_of_the_unseen_bench_has_a_character_multi30k_lacks(tmp_path):
    from test_nbest import train_tiny_run

    from bench.unseen import NAMES, SEEN, copies, markdown, unseen_characters

    unseen = unseen_characters(MIRROR, NAMES)
    assert list(unseen) == NAMES and all(unseen.values())
    assert not any(unseen_characters(MIRROR, SEEN).values())
    assert unseen["Ørjan"] == {"Ø"} and "r" not in unseen["Jiří"]
    (row,) = copies([train_tiny_run(tmp_path)], MIRROR, 1)
    assert row["sentences"] == 150 and row["byte_fallback"] is False
    assert 0 <= row["unseen_characters_kept"] <= 100 and 0 <= row["seen_name_copied"] <= 100
    assert row["name_copied_copy_unknown"] > row["name_copied"]  # a 3-step model copies none
    assert len(row["examples"]) == len(row["examples_copy_unknown"]) == 3
    assert markdown([row]).count("\n") == 2


def test_paragraphs_bench_cuts_the_paragraphs_it_makes(multi30k_layout):
    """Each three lines make a paragraph, given a period where they lack a stop; the sample
    corpus's paragraphs are cut where their lines meet."""
    from bench.paragraphs import markdown, paragraphs, splitter_rows

    assert paragraphs(["A dog", "A cat!", " Two. ", "One"], 3) == [
        ["A dog.", "A cat!", "Two."], ["One."]]
    rows = splitter_rows(multi30k_layout, 3, peer=False)
    assert [(r["split"], r["language"]) for r in rows] == [
        (split, lang) for split in ("train", "val", "test_2016_flickr") for lang in ("en", "de")]
    assert [r["exact"] for r in rows] == [r["paragraphs"] for r in rows] == [200, 200, 14, 14,
                                                                             14, 14]
    assert "| val | de | 14 | 14 | 0 | 0 | - |" in markdown({"runs": [], "splitter": rows})


def test_distill_bench_trains_its_students_on_the_teachers_translations(multi30k_layout,
                                                                        tmp_path):
    """The distilled corpus is Multi30k's with train.de the teacher's beam-5 translation of
    train.en, made once for a teacher (another teacher's students were trained on the first
    one's translations)."""
    from test_nbest import train_tiny_run

    from bench.distill import distilled_corpus
    from nmt_cli.data import read_lines
    from nmt_cli.translate import Translator

    teacher = train_tiny_run(tmp_path)
    folder = tmp_path / "distilled"
    assert distilled_corpus(teacher, multi30k_layout, folder) > 0
    sources = read_lines(folder / "train.en.gz")
    assert sources == read_lines(multi30k_layout / "train.en.gz")
    translations = read_lines(folder / "train.de")
    assert translations == Translator.from_run(teacher, "cpu").translate(sources)
    assert distilled_corpus(teacher, multi30k_layout, folder) == 0.0  # kept, not made again
    assert sorted(p.name for p in folder.iterdir()) == [
        "teacher.json", "test_2016_flickr.de.gz", "test_2016_flickr.en.gz", "train.de",
        "train.en.gz", "val.de.gz", "val.en.gz"]
    other = shutil.copytree(teacher, tmp_path / "other")
    assert distilled_corpus(other, multi30k_layout, folder) > 0  # made again, for it


@pytest.mark.parametrize(("preset", "tgt_lang"), [("multi30k-transformer-20m", "de"),
                                                   ("multi30k-gru", "de"),
                                                   ("multi30k-transformer-20m", "de,fr")])
def test_guided_bench_aligns_trains_the_runs_and_scores_them(multi30k_layout, tmp_path,
                                                             monkeypatch, preset, tgt_lang):
    """The aligner's two directions are joined and split into train's and val's links; the
    guided runs train on train's, and the runs and the aligner are scored on the pairs given
    as hand-aligned (a stand-in aligner links each word to the word at its place). A GRU, and
    a model of two languages ("fr": the German again), have no run that teaches one head;
    the second is taught the links of each language, and scored in each."""
    import bench.guided as guided
    from bench import alignment, markup
    from nmt_cli.data import read_lines

    if tgt_lang != "de":
        corpus = tmp_path / "corpus"
        shutil.copytree(multi30k_layout, corpus)
        for name in ("train", "val", "test_2016_flickr"):
            shutil.copyfile(corpus / f"{name}.de.gz", corpus / f"{name}.fr.gz")
        multi30k_layout = corpus

    aligner = tmp_path / "aligner"
    aligner.write_text(f"#!{sys.executable}\n" + """import sys
src, tgt, forward, reverse = sys.argv[2:6]
with open(src) as s, open(tgt) as t, open(forward, "w") as f, open(reverse, "w") as r:
    for a, b in zip(s, t):
        links = " ".join(f"{k}-{k}" for k in range(min(len(a.split()), len(b.split()))))
        f.write(links + "\\n")
        r.write(links + "\\n")
""")
    aligner.chmod(0o755)
    monkeypatch.setattr(guided, "ensure_venv", lambda venv, install: aligner)
    sources = read_lines(multi30k_layout / "val.en.gz")[:3]
    targets = read_lines(multi30k_layout / "val.de.gz")[:3]
    gold = [{(k, k) for k in range(min(len(s.split()), len(t.split())))}
            for s, t in zip(sources, targets)]
    monkeypatch.setattr(alignment, "hand_aligned", lambda data: (sources, targets, gold))
    monkeypatch.setattr(markup, "hand_aligned", lambda data: (sources, targets, gold))
    monkeypatch.setattr(alignment, "read_gold", lambda: {1: gold[0], 2: gold[1], 3: gold[2]})
    tiny = ["model.d_model=32", "model.d_ff=64", "tokenizer.vocab_size=300",
            "train.validate_every=100000"]
    result = guided.measure(multi30k_layout, 0.05, tmp_path / "out", tiny, preset,
                            tgt_lang)  # 3 s each
    out = tmp_path / "out"
    assert len((out / "eflomal" / "train.align").read_text().splitlines()) == 600
    assert (out / "eflomal" / "val.align").read_text().splitlines()[0] == " ".join(
        f"{k}-{k}" for k in range(min(len(sources[0].split()), len(targets[0].split()))))
    names = ["unguided", "guided"] + ["guided-1-head"] * (preset == "multi30k-transformer-20m"
                                                          and tgt_lang == "de")
    configs = {name: json.loads((out / name / "config.json").read_text())["config"]
               for name in names}
    assert configs["unguided"]["data"]["alignments"] == ""
    links = ",".join(str(out / folder / "train.align") for folder in
                     ["eflomal", "eflomal-fr"][: len(tgt_lang.split(","))])
    for name in names[1:]:
        assert configs[name]["data"]["alignments"] == links
        assert configs[name]["data"]["tgt_lang"] == tgt_lang
    assert [configs[name]["model"]["alignment_heads"] for name in names] == [0, 0, 1][:len(names)]
    assert {configs[name]["model"]["arch"] for name in names} == {preset.split("-")[1]}
    assert result["alignment"][0]["aer"] == 0.0  # the stand-in's links are the gold ones
    assert [r["run"] for r in result["quality"]] == (
        names if tgt_lang == "de" else
        [f"{name}, into {language}" for name in names for language in ("de", "fr")])
    assert all(r["steps"] > 0 for r in result["quality"])
    last = result["quality"][-1]
    assert f"| {last['run']} | {last['steps']} |" in guided.markdown(result)


def test_glossary_bench_draws_base_forms_and_decodes_each_setting_both_ways(multi30k_layout,
                                                                            tmp_path):
    """A base form is the shortest known word that a noun extends by an ending; a term is
    held inflected when its last word is whole or takes an ending; each setting is decoded
    as given and inflected, and a term that is the reference's word is counted alike both
    ways."""
    import random

    from test_nbest import train_tiny_run

    from bench.glossary import (
        SETTINGS,
        base_form,
        draw_terms,
        holds_inflected,
        markdown,
        measure,
    )

    known = {"Hund", "Hunde", "rot", "Auto", "Wette"}
    assert [base_form(w, known) for w in ("Hunden", "Hunde", "roten", "Autos", "Wetter",
                                          "Autobahn", "Hund")] == [
        "Hund", "Hund", "rot", "Auto", "Wette", None, None]
    assert holds_inflected("Zwei Hunde laufen.", "Hund")
    assert holds_inflected("Ein roter Hund.", "roter Hund")
    assert not holds_inflected("Ein Hundeführer.", "Hund")  # "eführer" is no ending
    assert not holds_inflected("Ein roter Hund.", "rot Hund")  # only the last word inflects
    reference, output = "Zwei Hunde sehen rote Autos und die Hunden.", "Zwei Hunde sehen."
    for capitalised, nouns in ((True, {"Autos", "Hunden"}), (False, {"rote", "Autos", "Hunden"})):
        drawn = {word for seed in range(30) for word in draw_terms(
            reference, output, 1, 1, random.Random(seed), known, capitalised)}
        assert drawn == nouns  # not the first word, nor one the output has
    run = train_tiny_run(tmp_path, test_sentences=30)
    rows = measure([run], multi30k_layout, 30)
    assert [(r["setting"], r["search"]) for r in rows] == [
        (setting, search) for setting in SETTINGS for search in ("as given", "inflected")]
    for row in rows:
        if row["setting"] != "one word, base form" and row["search"] == "as given":
            assert row["reference_words"] == row["terms_placed"] > 50, row
    assert markdown(rows).count("\n") == len(rows) + 1
