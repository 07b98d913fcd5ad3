"""Word vectors as starting embeddings, nearest neighbours, and the bottleneck model."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from nmt_cli import DecodeConfig, Translator, resolve_config
from nmt_cli.checkpoint import LAST_WEIGHTS
from nmt_cli.cli import app
from nmt_cli.errors import UserError
from nmt_cli.training import Trainer, prepare_run_dir, resume
from nmt_cli.word_vectors import principal_components, read_vectors

TINY = ["model.d_model=32", "model.d_ff=64", "model.num_encoder_layers=1",
        "model.num_decoder_layers=1", "tokenizer.vocab_size=300", "train.validate_every=4",
        "train.max_steps=4"]


def write_vectors(path, words: dict[str, list[float]], header: bool = False):
    lines = [f"{len(words)} {len(next(iter(words.values())))}"] if header else []
    lines += [" ".join([w, *map(str, v)]) for w, v in words.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def train(corpus, tmp_path, name: str, *settings: str):
    config = resolve_config("gru", settings=[*TINY, *settings],
                            options={"data.data_dir": str(corpus)})
    events = []
    run_dir = Trainer(config, prepare_run_dir(tmp_path / name), events.append).run()
    return run_dir, events


def test_pretrained_vectors_start_the_embeddings_and_can_stay_frozen(small_corpus, tmp_path):
    vectors = write_vectors(tmp_path / "vectors.txt", {
        "the": [0.5] * 32, "is": [0.25] * 32, "zebra": [-1.0] * 32}, header=True)
    run_dir, events = train(small_corpus, tmp_path, "run", f"model.src_embeddings={vectors}",
                            "model.freeze_embeddings=true", "model.tie_embeddings=false")
    coverage = [e["message"] for e in events if "model.src_embeddings" in e.get("message", "")]
    assert len(coverage) == 1 and " of 300 pieces" in coverage[0]
    translator = Translator.from_run(run_dir, "cpu")
    model, tokenizer = translator.run.model, translator.run.tokenizer
    the = tokenizer.src.piece_to_id("\u2581the")
    assert the != tokenizer.src.unk_id()
    assert torch.equal(model.src_embedding.weight[the], torch.full((32,), 0.5))  # frozen
    resume(run_dir, {"train.max_steps": 8})  # frozen still: a resumed run freezes anew
    model = Translator.from_run(run_dir, "cpu", LAST_WEIGHTS).run.model
    assert torch.equal(model.src_embedding.weight[the], torch.full((32,), 0.5))
    assert not torch.equal(model.tgt_embedding.weight, translator.run.model.tgt_embedding.weight)


def test_finetuning_can_keep_the_parents_embeddings(small_corpus, tmp_path):
    parent, _ = train(small_corpus, tmp_path, "parent")
    child, events = train(small_corpus, tmp_path, "child", f"train.finetune_from={parent}",
                          "model.freeze_embeddings=true")
    assert any("fine-tuning" in e.get("message", "") for e in events)
    before, after = (Translator.from_run(run, "cpu", LAST_WEIGHTS).run.model
                     for run in (parent, child))
    for name in ("src_embedding", "tgt_embedding"):
        assert torch.equal(getattr(before, name).weight, getattr(after, name).weight)
    assert not torch.equal(before.encoder_rnn.weight_hh_l0, after.encoder_rnn.weight_hh_l0)
    result = CliRunner().invoke(app, ["train", "--data", str(small_corpus), "--finetune",
                                      str(parent), "--run", str(tmp_path / "cli"),
                                      "--max-steps", "1"])
    assert result.exit_code == 0, result.output  # the GRU's preset, not the Transformer's
    schedule = json.loads((tmp_path / "cli" / "config.json").read_text())["config"]["train"][
        "schedule"]
    assert schedule == resolve_config("gru").train.schedule != resolve_config().train.schedule


def test_bad_vector_files_are_one_line_errors(tmp_path):
    wrong = write_vectors(tmp_path / "wrong.txt", {"man": [0.5] * 8})
    with pytest.raises(UserError, match=r"wrong.txt:1: a vector of 8 values where 32"):
        read_vectors(wrong, 32)
    broken = tmp_path / "broken.txt"
    broken.write_text("man 0.1 0.2\nwoman 0.1 x\n")
    with pytest.raises(UserError, match=r"broken.txt:2: the vector holds something other"):
        read_vectors(broken)
    broken.write_text("man 0.1 0.2\nwoman 0.1\n")  # no model: the first line sets the size
    with pytest.raises(UserError, match=r"broken.txt:2: a vector of 1 values where 2 are needed "
                                        r"\(as on line 1\)$"):
        read_vectors(broken)
    for value in ("nan", "-inf", "1e39"):  # 1e39: past float32's range
        broken.write_text(f"man 0.1 0.2\nwoman 0.1 {value}\n")
        with pytest.raises(UserError, match=r"broken.txt:2: the vector holds a value that is "
                                            r"not a finite number$"):
            read_vectors(broken)
    result = CliRunner().invoke(app, ["embeddings", "--vectors", str(broken),
                                      "--neighbors", "man"])
    assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "broken.txt:2" in result.stderr


def test_neighbours_by_cosine_similarity_in_a_vector_file(tmp_path):
    vectors = write_vectors(tmp_path / "v.txt", {
        "king": [1.0, 0.9, 0.0], "queen": [0.9, 1.0, 0.1], "apple": [0.0, 0.1, 1.0],
        "pear": [0.1, 0.0, 0.9]})
    result = CliRunner().invoke(app, ["embeddings", "--vectors", str(vectors), "--neighbors",
                                      "king", "-k", "2", "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)["neighbours"]
    assert [n["label"] for n in found] == ["queen", "pear"]
    assert found[0]["similarity"] > 0.9 > found[1]["similarity"]


def test_neighbours_in_a_trained_run(small_corpus, tmp_path):
    run_dir, _ = train(small_corpus, tmp_path, "run")
    result = CliRunner().invoke(app, ["embeddings", str(run_dir), "--neighbors", "the",
                                      "-k", "5", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["query"] == "\u2581the" and len(report["neighbours"]) == 5
    assert all(-1.0 <= n["similarity"] <= 1.0 for n in report["neighbours"])
    unseen = CliRunner().invoke(app, ["embeddings", str(run_dir), "--neighbors", "xyzzyq",
                                      "--json"])  # no piece of its own: its first, said so
    query = json.loads(unseen.stdout)["query"]
    assert unseen.exit_code == 0 and query not in ("\u2581", "\u2581xyzzyq") and "x" in query
    assert unseen.stderr == (f"note: 'xyzzyq' has no piece of its own; its first piece "
                             f"{query!r} stands for it\n")
    vectors = str(run_dir / "config.json")  # refused before it is read
    both = CliRunner().invoke(app, ["embeddings", str(run_dir), "--vectors", vectors,
                                    "--neighbors", "the"])
    assert both.exit_code == 1 and "RUN" in both.stderr and "has nothing to do" in both.stderr
    for word, message in (("the dog", "give one word"),
                          ("Ольга", "the vocabulary has no piece of it")):
        result = CliRunner().invoke(app, ["embeddings", str(run_dir), "--neighbors", word])
        assert result.exit_code == 1 and result.stderr == (
            f"error: --neighbors {word!r}: {message}\n")


def test_neighbours_are_pieces_of_text_never_special_or_byte_pieces(small_corpus, tmp_path):
    run_dir, _ = train(small_corpus, tmp_path, "run", "tokenizer.byte_fallback=true",
                       "tokenizer.vocab_size=600")
    result = CliRunner().invoke(app, ["embeddings", str(run_dir), "--neighbors", "the",
                                      "-k", "5000", "--json"])
    assert result.exit_code == 0, result.output
    pieces = [n["label"] for n in json.loads(result.stdout)["neighbours"]]
    assert len(pieces) == 600 - 4 - 256 - 1  # all but the special pieces, bytes and "▁the"
    assert not any(p.startswith("<") and p.endswith(">") for p in pieces)


def test_principal_components_keep_a_plane_of_points_as_it_is():
    """Points on a plane in 5 dimensions: the first two components hold all the variance,
    and keep every distance between the points; the first holds the most."""
    generator = torch.Generator().manual_seed(0)
    plane = torch.linalg.qr(torch.randn(5, 2, generator=generator))[0]  # (5, 2), orthonormal
    flat = torch.randn(12, 2, generator=generator) * torch.tensor([3.0, 1.0])
    points = flat @ plane.T + torch.randn(5, generator=generator)  # (12, 5), moved off 0
    coords, explained = principal_components(points)
    assert coords.shape == (12, 2) and sum(explained) == pytest.approx(1.0)
    assert explained[0] > explained[1]
    assert torch.cdist(coords, coords) == pytest.approx(torch.cdist(points, points), abs=1e-4)
    assert coords.mean(0) == pytest.approx(torch.zeros(2), abs=1e-5)


def test_a_word_map_draws_the_words_and_their_neighbours(small_corpus, tmp_path):
    from nmt_cli.pictures import read_png

    vectors = write_vectors(tmp_path / "v.txt", {
        "king": [1.0, 0.9, 0.0, 0.1], "queen": [0.9, 1.0, 0.1, 0.0],
        "apple": [0.0, 0.1, 1.0, 0.9], "pear": [0.1, 0.0, 0.9, 1.0], "car": [0.5, 0.5, 0.5, 0.5]})
    result = CliRunner().invoke(app, ["embeddings", "--vectors", str(vectors), "--neighbors",
                                      "king", "-k", "1", "--words", "apple, pear,king",
                                      "-o", str(tmp_path / "map.png"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [p["label"] for p in report["points"]] == ["king", "queen", "apple", "pear"]
    x = {p["label"]: p["x"] for p in report["points"]}  # the fruit apart from the royals
    assert (x["king"] - x["apple"]) * (x["queen"] - x["pear"]) > 0
    assert read_png(tmp_path / "map.png").shape[2] == 3
    run_dir, _ = train(small_corpus, tmp_path, "run")
    result = CliRunner().invoke(app, ["embeddings", str(run_dir), "--words", "man,woman,dog",
                                      "--neighbors", "the", "-k", "3", "-o",
                                      str(tmp_path / "run.svg")])
    assert result.exit_code == 0 and result.stdout.strip() == str(tmp_path / "run.svg")
    assert "first two principal components" in (tmp_path / "run.svg").read_text()
    for args, message in (
            (["--words", "man,woman,dog"], "give -o FILE.png"),
            (["--words", "man,woman", "-o", str(tmp_path / "two.png")],
             "three different words or pieces; these give 2"),
            (["--words", "a,b,c", "-o", str(tmp_path / "map.jpg")], "ends in .png or .svg")):
        refused = CliRunner().invoke(app, ["embeddings", str(run_dir), *args])
        assert refused.exit_code == 1 and message in refused.output, refused.output
    missing = CliRunner().invoke(app, ["embeddings", "--vectors", str(vectors), "--words",
                                       "king,queen,plum", "-o", str(tmp_path / "m.png")])
    assert missing.exit_code == 1 and "no vector for 'plum'" in missing.output


def test_a_word_map_says_which_piece_stands_for_a_word_without_its_own(small_corpus,
                                                                      tmp_path):
    """"red" and "running" both stood as the piece "r" in a small vocabulary: the map drew one
    point for the two, and said nothing."""
    run_dir, _ = train(small_corpus, tmp_path, "run")
    words = ["xyzzyq", "xyzzyr", "the", "a"]
    result = CliRunner().invoke(app, ["embeddings", str(run_dir), "--words", ",".join(words),
                                      "-o", str(tmp_path / "map.png"), "--json"])
    assert result.exit_code == 0, result.output
    drawn = [point["label"] for point in json.loads(result.stdout)["points"]]
    notes = result.stderr.splitlines()
    assert [note.split("'")[1] for note in notes] == words[:2]
    stand_ins = [note.split("first piece ")[1].split(" stands")[0].strip("'") for note in notes]
    assert len(drawn) == len(set(stand_ins)) + 2 and all("x" in piece for piece in stand_ins)


def test_a_word_map_names_the_pieces_of_a_word_apart():
    """"▁shirt" (the word) and "shirt" (inside "T-shirt") were both labelled "shirt", and
    both drawn as the query when it was one of them; the bare "▁" had no label at all."""
    from nmt_cli.word_vectors import map_label

    pieces = ["▁shirt", "shirt", "▁", "s", "▁T"]
    assert [map_label(piece) for piece in pieces] == ["shirt", "##shirt", "▁", "##s", "T"]


def test_a_word_map_keeps_the_labels_of_close_points_apart():
    from nmt_cli.pictures import overlap, word_map_figure

    # where a run's map put these words: "ball", "parachute" and "puppy" less than 10
    # pixels apart, "Shepherd" and "bird" too; drawn at their corners, labels overlapped
    places = {"dog": (0.25, 0.23), "dogs": (0.12, 0.03), "Shepherd": (0.2, 0.0),
              "bird": (0.205, -0.02), "parachute": (0.17, -0.1), "puppy": (0.185, -0.1),
              "ball": (0.16, -0.12), "jockey": (0.0, -0.12), "poodle": (0.21, -0.18),
              "man": (-0.22, 0.6), "red": (-0.51, -0.27), "running": (-0.01, -0.54)}
    points = [{"label": word, "x": x, "y": y} for word, (x, y) in places.items()]
    figure = word_map_figure(points, "a title", highlight="dog")
    figure.draw_without_rendering()
    ax = figure.axes[0]
    labels = {text.get_text(): text for text in ax.texts}
    assert sorted(labels) == sorted(point["label"] for point in points)
    assert labels["dog"].get_fontweight() == "bold"
    boxes = {name: text.get_window_extent() for name, text in labels.items()}
    for i, a in enumerate(boxes.values()):
        assert all(overlap(a, b) == 0 for b in list(boxes.values())[i + 1:])
    for point in points:  # each label beside its own point, within a few pixels
        x, y = ax.transData.transform((point["x"], point["y"]))
        box = boxes[point["label"]]
        assert box.x0 - 12 <= x <= box.x1 + 12 and box.y0 - 12 <= y <= box.y1 + 12
    assert overlap(boxes["dog"], boxes["dog"]) > 0


def test_the_bottleneck_model_trains_and_decodes_through_the_same_search(small_corpus,
                                                                        tmp_path):
    run_dir, events = train(small_corpus, tmp_path, "none", "model.attention=none")
    assert [e["step"] for e in events if e["kind"] == "validate"] == [4]
    translator = Translator.from_run(run_dir, "cpu")
    model = translator.run.model
    src = torch.tensor([[5, 6, 7, 3], [8, 9, 3, 0]])
    assert model.start(src).memory.shape == (2, 1, 32)  # one summary vector per sentence
    for beam in (1, 3):
        out = translator.translate(["A man is riding a bike.", ""], DecodeConfig(beam=beam))
        assert len(out) == 2 and out[1] == ""
