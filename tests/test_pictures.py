"""Seeing inside: attention maps, learning curves and the pictures drawn from them.

The numbers first (attention rows are distributions, the decoder never looks ahead, a model
that learned to copy looks at the piece it copies), then the files (real, non-blank PNGs of the
expected size; SVGs that are XML), then the command line, bad input included.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os
import random
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch
from test_cli import one_line_error
from test_learning import VOCAB, reverse_task
from typer.testing import CliRunner

from nmt_cli import DecodeConfig, UserError, checkpoint, pictures, resolve_config, training
from nmt_cli.alignment import hard_links, hypothesis_attention
from nmt_cli.attention_maps import attention_maps, attention_weights, map_counts, select_maps
from nmt_cli.cli import app
from nmt_cli.data import Batch
from nmt_cli.guided_alignment import ALIGNMENT_LAYER
from nmt_cli.learning_curves import learning_curves, ranking_metric, read_metrics
from nmt_cli.loss import output_cross_entropy
from nmt_cli.markup import parse
from nmt_cli.models import build_model
from nmt_cli.special_tokens import PAD_ID
from nmt_cli.training import Trainer, prepare_run_dir
from nmt_cli.translate import Translator

from conftest import TINY, random_tokens, tiny_model

SENTENCE = "A man is riding a bike."


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models run fastest on one thread, above all beside other work on 2 cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def train_run(corpus: Path, arch: str, run_dir: Path, *settings: str) -> Path:
    """A 4-step run with validations at steps 2 and 4."""
    config = resolve_config(arch, settings=[
        "model.d_model=32", "model.d_ff=64", "model.num_heads=4",
        "model.num_encoder_layers=2", "model.num_decoder_layers=2",
        "tokenizer.vocab_size=300", "train.validate_every=2", "train.max_steps=4", *settings],
        options={"data.data_dir": str(corpus)})
    return Trainer(config, prepare_run_dir(run_dir), lambda event: None).run()


@pytest.fixture(scope="module")
def runs(small_corpus, tmp_path_factory) -> dict[str, Path]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # restored below: later tests compare runs across processes
    try:
        root = tmp_path_factory.mktemp("pictures")
        return {arch: train_run(small_corpus, arch, root / arch)
                for arch in ("transformer", "gru")}
    finally:
        torch.set_num_threads(threads)


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def read_png(path: Path):
    """(height, width, channels) floats in 0..1."""
    import matplotlib.image

    return matplotlib.image.imread(path)


def assert_real_picture(path: Path, width_inches: float, height_inches: float) -> None:
    pixels = read_png(path)
    height, width = pixels.shape[:2]  # matplotlib rounds each down or to the nearest pixel
    assert abs(height - height_inches * pictures.DPI) < 1
    assert abs(width - width_inches * pictures.DPI) < 1
    assert pixels[..., :3].var() > 0  # not blank
    assert path.stat().st_size < 200_000


# The numbers -------------------------------------------------------------------------------

def test_self_attention_rows_are_distributions_and_the_decoder_never_looks_ahead():
    model = tiny_model("transformer")
    src = random_tokens(2, 6)
    src[1, 4:] = PAD_ID
    tgt_in = random_tokens(2, 5, seed=1)
    with torch.no_grad():
        encoder, decoder = model.self_attention_weights(src, tgt_in)
    assert len(encoder) == len(decoder) == 2
    assert encoder[0].shape == (2, 4, 6, 6) and decoder[0].shape == (2, 4, 5, 5)
    for weights in encoder + decoder:
        assert torch.allclose(weights.sum(-1), torch.ones(weights.shape[:-1]))
    for weights in encoder:
        assert (weights[1, :, :, 4:] == 0).all()  # padded source keys get nothing
    above = torch.ones(5, 5, dtype=torch.bool).triu(1)
    for weights in decoder:
        assert (weights[..., above] == 0).all() and (weights[..., ~above] > 0).all()


def test_maps_of_a_run_are_distributions_over_what_each_position_sees(runs):
    translator = Translator.from_run(runs["transformer"], "cpu")
    for kind in ("cross", "encoder", "decoder"):
        maps = attention_maps(translator, SENTENCE, kind, layer="all", head="all")
        assert [(m.layer, m.head) for m in maps.maps] == [
            (layer, head) for layer in (1, 2) for head in (1, 2, 3, 4, "mean")]
        for head_map in maps.maps:
            weights = torch.tensor(head_map.weights)  # (rows, columns)
            assert weights.shape == (len(maps.rows), len(maps.columns))
            assert torch.allclose(weights.sum(-1), torch.ones(len(maps.rows)))
            if kind == "decoder":
                assert (weights.triu(1) == 0).all()
    assert maps.source[-1] == maps.output[-1] == "<eos>" and maps.rows[0] == "<sos>"
    assert maps.translation == translator.translate([SENTENCE])[0]


@pytest.mark.parametrize("arch", ["transformer", "gru"])
def test_maps_of_a_translation_forced_to_open_with_a_prefix(runs, arch):
    """`nmt attention --prefix`: the maps of the translation `translate` gives with that
    prefix, its pieces the first rows."""
    run, prefix = runs[arch], "Ein Junge"
    translator = Translator.from_run(run, "cpu")
    maps = attention_maps(translator, SENTENCE, "cross", head="mean", prefix=prefix)
    pieces = translator.run.tokenizer.tgt.encode(prefix, out_type=str)
    assert maps.output[: len(pieces)] == maps.rows[: len(pieces)] == pieces
    assert maps.translation == translator.translate([SENTENCE], prefixes=[prefix])[0]
    assert maps.translation != translator.translate([SENTENCE])[0]
    printed = json.loads(invoke("attention", SENTENCE, "--run", str(run), "--head", "mean",
                                "--prefix", prefix, "--json").stdout)
    assert printed == maps.to_json()


def test_head_mean_is_the_mean_of_the_heads(runs):
    translator = Translator.from_run(runs["transformer"], "cpu")
    every = attention_maps(translator, SENTENCE, "cross", layer=1, head="all").maps
    mean = attention_maps(translator, SENTENCE, "cross", layer=1, head="mean").maps
    heads = torch.tensor([m.weights for m in every[:-1]])
    assert torch.allclose(torch.tensor(mean[0].weights), heads.mean(0))
    assert every[-1].weights == mean[0].weights


def copy_task(count: int, seed: int) -> tuple[list[list[int]], list[list[int]]]:
    sources, _ = reverse_task(count, seed)
    return sources, [list(s) for s in sources]


def train_to_copy(arch: str, attention: str, steps: int, lr: float) -> torch.nn.Module:
    torch.manual_seed(0)
    config = dataclasses.replace(TINY, arch=arch, attention=attention)
    model = build_model(config, VOCAB, VOCAB, joint_vocab=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)
    for step in range(steps):
        batch = Batch.from_ids(*copy_task(32, seed=step))
        loss = output_cross_entropy(model.features(batch.src, batch.tgt_in),
                                    model.output_proj.weight, batch.tgt_out)
        optimizer.zero_grad()
        (loss / batch.num_tgt_tokens).backward()
        optimizer.step()
        schedule.step()
    return model.eval()


@pytest.mark.parametrize(("arch", "attention", "steps", "lr"), [
    ("gru", "additive", 300, 2e-2), ("gru", "dot", 200, 2e-2), ("gru", "general", 200, 2e-2),
    ("transformer", "additive", 300, 5e-3)])
def test_a_model_that_learned_to_copy_looks_at_the_piece_it_copies(arch, attention, steps, lr):
    model = train_to_copy(arch, attention, steps, lr)
    sources, targets = copy_task(50, seed=-1)
    aligned = total = 0
    for source, target in zip(sources, targets):
        layers = attention_weights(model, source, target, "cross", torch.device("cpu"))
        last = select_maps(layers, len(layers), "mean")[0]  # the last layer's head-mean
        looked_at = torch.tensor(last.weights)[: len(target)].argmax(-1)  # (output tokens,)
        aligned += int((looked_at == torch.arange(len(target))).sum())
        total += len(target)
    assert aligned / total >= 0.9, f"{arch} ({attention}): {aligned / total:.0%} aligned"
    # Each token a word: word alignment links each output word to the source word it copies.
    weights = hypothesis_attention(model, sources, targets, torch.device("cpu"), ALIGNMENT_LAYER)
    links = [link for source, target, w in zip(sources, targets, weights)
             for link in hard_links(w, list(range(len(source))), list(range(len(target))))]
    diagonal = sum(s == t for s, t in links) / len(links)
    assert diagonal >= 0.9, f"{arch} ({attention}): {diagonal:.0%} of links to the same word"
    # so markup around a word of each source goes around the same word of its copy
    rng, landed = random.Random(0), 0
    for source, target, w in zip(sources, targets, weights):
        words, k = [f"w{token}" for token in source], rng.randrange(len(source))
        line = " ".join([*words[:k], f"<b>{words[k]}</b>", *words[k + 1:]])
        links = hard_links(w, list(range(len(source))), list(range(len(target))))
        landed += parse(line).restore(" ".join(f"w{token}" for token in target), links) == line
    assert landed / len(sources) >= 0.9, f"{arch} ({attention}): {landed} of {len(sources)}"


def test_cross_maps_mark_the_cells_word_alignment_picks(runs):
    for arch, run in runs.items():
        translator = Translator.from_run(run, "cpu")
        maps = attention_maps(translator, SENTENCE, layer="all", head="mean").to_json()
        chosen = [m for m in maps["maps"] if m["layer"] == maps["alignment_layer"]][0]
        weights = torch.tensor(chosen["weights"])  # the mean of that layer's heads
        cells = maps["alignment_cells"]
        columns = [column for _, column in cells]  # at most a cell per source piece
        assert len(set(columns)) == len(columns) >= len(SENTENCE.split())
        assert max(columns) < len(maps["source"]) - 1  # not <eos>
        rows = len(maps["output"]) - 1  # the output's pieces, <eos> aside
        for row, column in cells:  # the output piece that attends to the source piece most
            assert weights[row, column] == weights[:rows, column].max()
        (found,) = translator.translate_nbest([SENTENCE], DecodeConfig(), alignment=True)
        assert maps["alignment"] == [list(link) for link in found[0].alignment], arch
        assert maps["translation"] == found[0].text
    encoder = attention_maps(Translator.from_run(runs["transformer"], "cpu"), SENTENCE,
                             "encoder").to_json()
    assert encoder["alignment"] is encoder["alignment_cells"] is None


def test_a_gru_without_attention_has_no_map():
    with pytest.raises(UserError, match="no attention"):
        map_counts(tiny_model("gru", attention="none"), "cross")
    assert map_counts(tiny_model("gru", attention="dot"), "cross") == (1, 1)


def test_learning_curves_follow_metrics_jsonl(runs):
    curve = learning_curves([runs["transformer"]])[0]
    records = read_metrics(runs["transformer"])
    steps = {r["step"]: r for r in records if r["kind"] == "step"}
    assert curve.steps == [1, 2, 3, 4] and curve.val_steps == [2, 4]
    assert curve.loss == [steps[s]["loss"] for s in curve.steps]
    assert curve.val_minutes == [steps[s]["elapsed"] / 60 for s in (2, 4)]
    assert curve.val_bleu == [r["val_bleu"] for r in records if r["kind"] == "validate"]
    assert curve.val_chrf == [r["val_chrf"] for r in records if r["kind"] == "validate"]


# The files ---------------------------------------------------------------------------------

def test_attention_picture_is_a_real_image_and_json_gives_its_numbers(runs, tmp_path):
    run = str(runs["transformer"])
    result = invoke("attention", SENTENCE, "--run", run, "-o", str(tmp_path / "a.png"))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(tmp_path / "a.png")
    printed = json.loads(invoke("attention", SENTENCE, "--run", run, "--kind", "decoder",
                                "--head", "mean", "--beam", "2", "--json").stdout)
    expected = attention_maps(Translator.from_run(run, "cpu"), SENTENCE, "decoder", None,
                              "mean", DecodeConfig(beam=2)).to_json()
    assert printed == expected  # JSON keeps every float exactly
    cross = attention_maps(Translator.from_run(run, "cpu"), SENTENCE).to_json()
    assert_real_picture(tmp_path / "a.png", *pictures.attention_figure_size(cross))
    assert not (tmp_path / "attention.png").exists()


@pytest.mark.parametrize("arch", ["transformer", "gru"])
def test_each_validation_draws_the_attention_of_its_first_sentences(small_corpus, tmp_path, arch):
    run = train_run(small_corpus, arch, tmp_path / "run", "train.attention_plots=2")
    drawn = sorted(p.name for p in (run / "attention").iterdir())
    assert drawn == ["step-000002-1.png", "step-000002-2.png", "step-000004-1.png",
                     "step-000004-2.png"]
    # the last validation's pictures are those `nmt attention` draws with the last weights
    translator = Translator.from_run(run, "cpu", weights="last.safetensors")
    for k, sentence in enumerate((small_corpus / "val.en").read_text().splitlines()[:2], 1):
        maps = attention_maps(translator, sentence, config=DecodeConfig(beam=1)).to_json()
        assert_real_picture(run / "attention" / f"step-000004-{k}.png",
                            *pictures.attention_figure_size(maps))


def test_a_picture_that_cannot_be_written_is_a_warning(small_corpus, tmp_path, monkeypatch):
    def disk_full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(training, "draw_validation_attention", disk_full)
    config = resolve_config("gru", settings=["model.d_model=16", "tokenizer.vocab_size=300",
                                             "train.max_steps=2", "train.validate_every=1",
                                             "train.attention_plots=1"],
                            options={"data.data_dir": str(small_corpus)})
    events = []
    Trainer(config, prepare_run_dir(tmp_path / "run"), events.append).run()
    warnings = [e["message"] for e in events if e["kind"] == "warning"]
    assert warnings == [f"step {s}: could not draw the attention pictures (No space left on "
                        "device)" for s in (1, 2)]
    assert events[-1]["kind"] == "done" and events[-1]["step"] == 2


def test_a_long_title_is_wrapped_to_fit_across_its_picture():
    """A title holding a run's path, as `eval --by-length -o` writes, once ran off both sides."""
    for width in (4.5, 7.0):
        figure = pictures.new_figure(width, 3.8)
        title = "BLEU by source length: " + "/a/long/path/to/the/run" * 6
        text = figure.subplots().set_title(pictures.fitted(title, figure), fontsize=10)
        figure.canvas.draw()
        box = text.get_window_extent()
        assert 0 <= box.x0 and box.x1 <= figure.bbox.width and "\n" in text.get_text()


def test_svg_output_is_xml(runs, tmp_path):
    result = invoke("attention", SENTENCE, "--run", str(runs["gru"]), "-o",
                    str(tmp_path / "gru.svg"))
    assert result.exit_code == 0, result.output
    assert ET.parse(tmp_path / "gru.svg").getroot().tag.endswith("svg")
    text = (tmp_path / "gru.svg").read_text()  # the SVG names its texts in comments
    assert "gru (additive)" in text and "head 1" not in text  # a GRU has no layers or heads


def synthetic_maps(rows: int, columns: int, layers: int, heads: int) -> dict:
    """AttentionMaps.to_json() of a Transformer: uniform weights, pieces named p0, p1, ..."""
    names = [f"p{i}" for i in range(max(rows, columns))]
    weights = [[1 / columns] * columns for _ in range(rows)]
    return {"run": "run", "model": "transformer", "kind": "cross", "translation": "x",
            "source": names[:columns], "output": names[:rows], "rows": names[:rows],
            "columns": names[:columns], "num_layers": layers, "num_heads": heads,
            "maps": [{"layer": layer, "head": head, "weights": weights}
                     for layer in range(1, layers + 1) for head in range(1, heads + 1)]}


def test_the_pieces_of_a_long_sentence_are_named_where_their_labels_fit(tmp_path):
    """Labels no smaller than 6 points: where a cell is less high than that, one piece in k
    is named (labels of 4 points once overlapped into a smear on 96 pieces, layer all)."""
    short = pictures.draw_attention(synthetic_maps(8, 10, 1, 1), tmp_path / "short.svg")
    text = short.read_text()
    assert all(f"<!-- p{i} -->" in text for i in range(10)) and "named)" not in text
    long = pictures.draw_attention(synthetic_maps(58, 96, 3, 5), tmp_path / "long.svg")
    text = long.read_text()
    every = next(k for k in range(2, 10) if f"source (one piece in {k} named)" in text)
    assert f"output (one piece in {every} named)" in text
    shown = [i for i in range(96) if f"<!-- p{i} -->" in text]
    assert shown == list(range(0, 96, every))


def test_plot_overlays_runs_and_json_gives_their_series(runs, tmp_path):
    names = [str(runs["transformer"]), str(runs["gru"])]
    result = invoke("plot", *names, "-o", str(tmp_path / "curves.png"))
    assert result.exit_code == 0, result.output
    assert_real_picture(tmp_path / "curves.png", *pictures.CURVES_SIZE)
    printed = json.loads(invoke("plot", *names, "--json").stdout)
    assert printed == {"runs": [curve.to_json() for curve in learning_curves(names)]}
    for command in (["plot", *names], ["attention", "A man.", "--run", names[0]]):
        one_line_error(invoke(*command, "--json", "-o", str(tmp_path / "not-drawn.png")),
                       "-o names a picture, and --json draws none")
    assert not (tmp_path / "not-drawn.png").exists()
    result = invoke("plot", *names, "--metric", "chrf", "-o", str(tmp_path / "chrf.png"))
    assert result.exit_code == 0, result.output
    assert_real_picture(tmp_path / "chrf.png", *pictures.CURVES_SIZE)
    assert (read_png(tmp_path / "chrf.png") != read_png(tmp_path / "curves.png")).any()
    older = {**printed["runs"][0], "val_chrf": [None] * len(printed["runs"][0]["val_steps"])}
    pictures.draw_curves([older], tmp_path / "older.png", "chrf")  # logged no chrF: a gap
    assert_real_picture(tmp_path / "older.png", *pictures.CURVES_SIZE)
    # the two losses are told apart: a smoothed one is not the validation's plain one
    text = pictures.draw_curves(printed["runs"], tmp_path / "curves.svg").read_text()
    assert "training (loss as optimized: label-smoothed)" in text
    assert "validation (loss: cross-entropy alone)" in text


def strict_json(text: str):
    """JSON as strict readers (jq, JavaScript) take it: a bare NaN or Infinity is an error."""
    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_a_skipped_steps_nan_loss_is_written_and_printed_as_null(runs, tmp_path):
    """Training logs a skipped step's loss as NaN: metrics.jsonl holds null there (a log
    written before, a bare NaN), read back as NaN, and `plot --json` prints null."""
    run = tmp_path / "run"
    shutil.copytree(runs["transformer"], run)
    record = {"kind": "step", "step": 99, "epoch": 1, "loss": float("nan"), "lr": 1e-3,
              "tokens": 10, "tokens_per_s": 5.0, "elapsed": 1.0}
    checkpoint.append_metrics(run, record)
    log = run / checkpoint.METRICS_FILE
    assert strict_json(log.read_text().splitlines()[-1])["loss"] is None
    with open(log, "a") as f:  # as json.dumps wrote it before
        f.write(json.dumps({**record, "step": 100}) + "\n")
    read = [r for _, r in checkpoint.metrics_records(log) if r["step"] in (99, 100)]
    assert len(read) == 2 and all(math.isnan(r["loss"]) for r in read)
    result = invoke("plot", str(run), "--json")
    assert result.exit_code == 0, result.output
    curve = strict_json(result.stdout)["runs"][0]
    assert curve["loss"][-2:] == [None, None] and None not in curve["loss"][:-2]


def test_plot_draws_the_score_every_run_ranks_by(runs, tmp_path):
    chrf = tmp_path / "by-chrf"
    shutil.copytree(runs["transformer"], chrf)
    described = json.loads((chrf / "config.json").read_text())
    described["config"]["train"]["best_metric"] = "chrf"
    (chrf / "config.json").write_text(json.dumps(described))
    assert ranking_metric([chrf]) == "chrf"
    assert ranking_metric([chrf, runs["gru"]]) == ranking_metric([tmp_path]) == "bleu"
    for name, options in (("default", []), ("chrf", ["--metric", "chrf"]),
                          ("bleu", ["--metric", "bleu"])):
        result = invoke("plot", str(chrf), *options, "-o", str(tmp_path / f"{name}.png"))
        assert result.exit_code == 0, result.output
    default, bleu = read_png(tmp_path / "default.png"), read_png(tmp_path / "bleu.png")
    assert (default == read_png(tmp_path / "chrf.png")).all() and (default != bleu).any()


def test_bleu_by_length_bars(tmp_path, monkeypatch):
    buckets = [{"bucket": "1-10", "sentences": 120, "bleu": 31.5},
               {"bucket": "11-20", "sentences": 300, "bleu": 27.25},
               {"bucket": "21+", "sentences": 80, "bleu": 18.0}]
    path = pictures.draw_bleu_by_length(buckets, tmp_path / "bleu.png", "BLEU by source length")
    assert_real_picture(path, 4.5, 3.8)
    save, axes = pictures.save, []  # by the references' lengths, named so (it said "source")
    monkeypatch.setattr(pictures, "save", lambda figure, path: (
        axes.append(figure.axes[0].get_xlabel()), save(figure, path))[1])
    pictures.draw_bleu_by_length(buckets, tmp_path / "ref.png", "BLEU by reference length",
                                 "reference")
    assert axes == ["reference length in words (bar label: sentences)"]


def test_pictures_draw_without_a_display(tmp_path):
    maps = {"run": "r", "model": "transformer", "kind": "cross", "translation": "b",
            "source": ["a", "<eos>"], "output": ["b", "<eos>"], "rows": ["b", "<eos>"],
            "columns": ["a", "<eos>"], "num_layers": 1, "num_heads": 1,
            "maps": [{"layer": 1, "head": 1, "weights": [[1.0, 0.0], [0.25, 0.75]]}]}
    without_display = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    code = ("import sys; from nmt_cli.pictures import draw_attention; "
            f"draw_attention({maps!r}, sys.argv[1])")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.png")],
                          capture_output=True, text=True, timeout=120,
                          env={**without_display, "MPLBACKEND": "tkagg"})
    assert done.returncode == 0, done.stderr
    assert_real_picture(tmp_path / "m.png", *pictures.attention_figure_size(maps))
    assert pictures.draw_attention(maps, tmp_path / "m.svg").stat().st_size > 0


def test_the_command_line_does_not_import_matplotlib():
    code = "import sys, nmt_cli.cli; print('matplotlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "False", done.stderr


# Bad input ---------------------------------------------------------------------------------

def test_bad_input_is_one_line(runs, tmp_path):
    transformer, gru = str(runs["transformer"]), str(runs["gru"])
    without_weights = tmp_path / "without-weights"
    shutil.copytree(transformer, without_weights)
    (without_weights / "model.safetensors").unlink()
    one_line_error(invoke("attention", SENTENCE, "--run", str(without_weights)),
                   "model.safetensors", "not found")
    one_line_error(invoke("attention", "  ", "--run", transformer), "sentence is empty")
    one_line_error(invoke("attention", SENTENCE, "--run", transformer, "--layer", "3"),
                   "--layer must be 1..2 or all", "'3'", "this model has 2 layers")
    one_line_error(invoke("attention", SENTENCE, "--run", transformer, "--head", "0"),
                   "--head must be 1..4 or all or mean", "this model has 4 heads")
    one_line_error(invoke("attention", SENTENCE, "--run", gru, "--layer", "2"),
                   "--layer must be 1 or all", "this model has 1 layer")
    one_line_error(invoke("attention", SENTENCE, "--run", gru, "--kind", "encoder"),
                   "--kind encoder", "GRU")
    one_line_error(invoke("attention", SENTENCE, "--run", transformer, "-o", "a.jpg"),
                   ".png or .svg")
    one_line_error(invoke("plot", str(tmp_path)), "no metrics.jsonl")
    one_line_error(invoke("plot", str(tmp_path / "missing")), "no such run directory")
    one_line_error(invoke("plot", str(runs["transformer"] / "config.json")),
                   "config.json: a file, not a run directory")
    one_line_error(invoke("translate", "--run", str(runs["transformer"] / "config.json"), "hi"),
                   "config.json: a file, not a run directory")


def test_bleu_by_length_of_several_systems_is_a_real_picture(tmp_path):
    systems = {name: [{"bucket": "1-10", "sentences": 400, "bleu": 20.0 + n},
                      {"bucket": "11-20", "sentences": 500, "bleu": 15.0 + 5 * n}]
               for n, name in enumerate(("none", "additive", "transformer"))}
    path = pictures.draw_bleu_by_length_of_systems(systems, tmp_path / "systems.png", "BLEU")
    assert_real_picture(path, 5.0, 3.8)
    with pytest.raises(UserError, match="-o"):
        pictures.draw_bleu_by_length_of_systems(systems, tmp_path / "systems.jpg", "BLEU")
