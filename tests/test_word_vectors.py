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
from nmt_cli.word_vectors import read_vectors

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


def test_neighbours_are_pieces_of_text_never_special_or_byte_pieces(small_corpus, tmp_path):
    run_dir, _ = train(small_corpus, tmp_path, "run", "tokenizer.byte_fallback=true",
                       "tokenizer.vocab_size=600")
    result = CliRunner().invoke(app, ["embeddings", str(run_dir), "--neighbors", "the",
                                      "-k", "5000", "--json"])
    assert result.exit_code == 0, result.output
    pieces = [n["label"] for n in json.loads(result.stdout)["neighbours"]]
    assert len(pieces) == 600 - 4 - 256 - 1  # all but the special pieces, bytes and "▁the"
    assert not any(p.startswith("<") and p.endswith(">") for p in pieces)


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
