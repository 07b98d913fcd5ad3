"""Guided alignment: word links read from a file, spread over pieces, and taught to attention."""

from pathlib import Path

import numpy as np
import pytest
import torch
from test_reliability import interrupted, step_losses
from typer.testing import CliRunner

from nmt_cli import preset
from nmt_cli.alignment import hypothesis_attention
from nmt_cli.cli import app
from nmt_cli.config import apply_overrides, resolve_config
from nmt_cli.data import Batch, ParallelText, make_batch
from nmt_cli.errors import UserError
from nmt_cli.guided_alignment import (
    ALIGNMENT_LAYER,
    WordAlignments,
    aligning_attention,
    alignment_layer,
    grow_diag_final_and,
    guided_alignment_loss,
    piece_words,
    read_alignments,
)
from nmt_cli.loss import teacher_forced_loss
from nmt_cli.models import attention_by_layer
from nmt_cli.special_tokens import EOS_ID, SOS_ID
from nmt_cli.training import Trainer, prepare_run_dir, resume

from conftest import random_tokens, read_sample, tiny_model, write_corpus

# ids 4 and 6 open words (as "▁a" and "▁b" would), 5 goes on one; 7 opens, 8 goes on
STARTS = np.array([False, False, False, False, True, False, True, True, False])


def test_a_target_piece_attends_evenly_to_the_pieces_of_its_words_source_words():
    links = WordAlignments([np.array([[0, 1], [1, 0]], dtype=np.int32),
                            np.zeros((0, 2), dtype=np.int32)], STARTS, STARTS)
    # source: word 0 = ids 4 5, word 1 = id 6; target: word 0 = ids 7 8, word 1 = id 4
    gold = links.targets([0, 1], [[4, 5, 6], [4]], [[7, 8, 4], [4]], src_len=5, tgt_len=4)
    assert gold.shape == (2, 4, 5)
    expected = torch.zeros(4, 5)
    expected[0, 2] = expected[1, 2] = 1.0  # target word 0 comes from source word 1 (id 6)
    expected[2, :2] = 0.5  # target word 1 from source word 0, two pieces
    assert torch.equal(gold[0], expected)  # no row for <eos> or padding, no column for <eos>
    assert not gold[1].any()  # a pair without links


def test_a_link_past_the_words_a_segmentation_found_is_left_out():
    links = WordAlignments([np.array([[0, 0], [3, 0]], dtype=np.int32)], STARTS, STARTS)
    gold = links.targets([0], [[4, 5]], [[7]], src_len=2, tgt_len=2)
    assert gold[0, 0].tolist() == [0.5, 0.5] and not gold[0, 1].any()


def test_the_loss_is_the_cross_entropy_of_the_attention_rows_with_links():
    attention = torch.tensor([[[0.5, 0.25, 0.25, 0.0], [0.1, 0.1, 0.8, 0.0]]])
    gold = torch.tensor([[[0.0, 0.5, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0]]])
    assert guided_alignment_loss(attention, gold).item() == pytest.approx(-np.log(0.25))
    attention.requires_grad_(True)
    guided_alignment_loss(attention, gold).backward()
    assert torch.isfinite(attention.grad).all()  # the zero weight of the <eos> column too


def test_the_aligning_attention_averages_the_first_heads_or_all():
    weights = torch.rand(2, 4, 3, 5)  # (batch, heads, rows, columns)
    assert torch.equal(aligning_attention(weights, 0), weights.mean(1))
    assert torch.equal(aligning_attention(weights, 1), weights[:, 0])
    assert torch.allclose(aligning_attention(weights, 3), (weights[:, 0] + weights[:, 1]
                                                           + weights[:, 2]) / 3)
    assert torch.equal(aligning_attention(weights[0], 2), weights[0, :2].mean(0))  # one pair


@pytest.mark.parametrize("heads", [0, 1])
def test_the_training_loss_adds_the_aligning_attentions_loss(heads):
    model = tiny_model(alignment_heads=heads)  # two decoder layers: the first aligns
    src, tgt = random_tokens(3, 7, seed=1), random_tokens(3, 6, seed=2)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    gold = torch.zeros(3, 5, 7)
    gold[:, torch.arange(5), torch.arange(5)] = 1.0
    plain = teacher_forced_loss(model, src, tgt_in, tgt_out)
    guided = teacher_forced_loss(model, src, tgt_in, tgt_out, alignment=gold,
                                 alignment_weight=0.5)
    layer = alignment_layer(len(model.decoder_layers))
    assert layer == 0
    weights = model.cross_attention_weights(src, tgt_in)
    attention = weights[layer][:, 0] if heads == 1 else weights[layer].mean(1)
    expected = plain + 0.5 * guided_alignment_loss(attention, gold)
    assert guided.item() == pytest.approx(expected.item(), rel=1e-5)
    for other in (weights[1].mean(1), weights[layer][:, 1], weights[layer].mean(1)):
        if other is not attention and not torch.equal(other, attention):
            assert guided_alignment_loss(other, gold).item() != pytest.approx(
                guided_alignment_loss(attention, gold).item(), rel=1e-3)


@pytest.mark.parametrize("score", ["additive", "general"])  # Bahdanau's and Luong's
def test_the_grus_training_loss_adds_its_attentions_loss(score):
    model = tiny_model("gru", attention=score)
    src, tgt = random_tokens(3, 7, seed=1), random_tokens(3, 6, seed=2)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    gold = torch.zeros(3, 5, 7)
    gold[:, torch.arange(5), torch.arange(5) + 1] = 1.0
    plain = teacher_forced_loss(model, src, tgt_in, tgt_out)
    guided = teacher_forced_loss(model, src, tgt_in, tgt_out, alignment=gold,
                                 alignment_weight=0.5)
    attention = model.attention_weights(src, tgt_in)  # what --alignment reads
    assert attention.shape == gold.shape
    expected = plain + 0.5 * guided_alignment_loss(attention, gold)
    assert guided.item() == pytest.approx(expected.item(), rel=1e-5)
    assert guided.item() > plain.item() + 1.0


def test_alignments_read_the_aligning_heads_and_attention_every_head():
    model = tiny_model(alignment_heads=1)
    sources, hypotheses = (random_tokens(2, n, seed=n).tolist() for n in (6, 4))
    src = torch.tensor([s + [EOS_ID] for s in sources])
    tgt_in = torch.tensor([[SOS_ID] + h for h in hypotheses])
    weights = model.cross_attention_weights(src, tgt_in)
    aligning = hypothesis_attention(model, sources, hypotheses, torch.device("cpu"),
                                    ALIGNMENT_LAYER)
    last = hypothesis_attention(model, sources, hypotheses, torch.device("cpu"), -1)
    for i in range(2):
        assert torch.allclose(aligning[i], weights[0][i, 0], atol=1e-6)
        assert torch.allclose(last[i], weights[1][i].mean(0), atol=1e-6)
        assert not torch.allclose(aligning[i], weights[0][i].mean(0), atol=1e-3)


def write_links(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(("lines", "message"), [
    (["0-0", "0:1"], r"links\.txt:2: '0:1' is no link; expected source-target"),
    (["0-0", "0-9"], r"links\.txt:2: 0-9 names target word 9, but that training pair's "
                     r"target has 2 words"),
    (["7-0", ""], r"links\.txt:1: 7-0 names source word 7, but that training pair's source "
                  r"has 3 words"),
    (["0-0"], r"links\.txt: 1 line of alignments for 2 training pairs"),
    (["0-0", "1-1-1"], r"links\.txt:2: '1-1-1' is no link"),
    (["0-0", "²-0"], r"links\.txt:2: '²-0' is no link"),
])
def test_a_bad_alignment_file_is_named_by_file_and_line(tmp_path, lines, message):
    path = write_links(tmp_path / "links.txt", lines)
    with pytest.raises(UserError, match=message):
        read_alignments([path], ParallelText(["a b c", "d e"], ["x y", "z w"]))


def test_links_are_read_per_line_and_an_empty_line_has_none(tmp_path):
    path = write_links(tmp_path / "links.txt", ["0-1 2-0", ""])
    links = read_alignments([path], ParallelText(["a b c", "d e"], ["x y", "z w"]))
    assert links[0].tolist() == [[0, 1], [2, 0]] and links[1].shape == (0, 2)


def test_each_target_language_has_its_file_and_no_link_counts_the_tag(tmp_path):
    text = ParallelText(["<2de> a b", "<2fr> a b", "<2fr> c"], ["x", "y z", "w"], parts=[1, 2])
    de = write_links(tmp_path / "de.align", ["1-0"])
    fr = write_links(tmp_path / "fr.align", ["0-1", "0-0"])
    links = read_alignments([de, fr], text)
    assert [pair.tolist() for pair in links] == [[[1, 0]], [[0, 1]], [[0, 0]]]
    past = write_links(tmp_path / "past.align", ["0-0", "1-0"])  # "<2fr> c" has one word
    with pytest.raises(UserError, match=r"past\.align:2: 1-0 names source word 1, but that "
                                        r"training pair's source has 1 word "):
        read_alignments([de, past], text)
    with pytest.raises(UserError, match=r"fr\.align: 2 lines of alignments for 1 training pair$"):
        read_alignments([fr, de], text)


CORPUS_PAIRS = 300


@pytest.fixture(scope="module")
def aligned_corpus(tmp_path_factory) -> tuple[Path, Path]:
    """300 sample pairs, and links that tie every target word to the first source word: a
    pattern attention does not follow on its own, and learns in a few steps when taught."""
    src, tgt = read_sample("train", "en", CORPUS_PAIRS), read_sample("train", "de", CORPUS_PAIRS)
    folder = write_corpus(tmp_path_factory.mktemp("aligned"), {
        "train": (src, tgt), "val": (read_sample("val", "en", 20), read_sample("val", "de", 20))})
    lines = [" ".join(f"0-{k}" for k in range(len(t.split()))) for t in tgt]
    return folder, write_links(folder / "train.align", lines)


def small(corpus: Path, **settings):
    return apply_overrides(preset("transformer"), {
        "data.data_dir": str(corpus), "model.d_model": 32, "model.d_ff": 64,
        "model.num_heads": 2, "model.dropout": 0.0, "tokenizer.vocab_size": 300,
        "train.batch_tokens": 1024, "train.warmup_steps": 10, "train.max_steps": 40,
        "train.validate_every": 1000, **settings})


def attention_loss(trainer: Trainer, batch: Batch, head: int | None = None) -> float:
    """The aligning layer's loss per target piece with links, on `batch`: of its heads
    averaged, or of one `head` (the GRU's one attention: one layer of one head)."""
    model = trainer.model.eval()
    with torch.no_grad():
        layers = attention_by_layer(model, batch.src, batch.tgt_in)
        weights = layers[alignment_layer(len(layers))]
        attention = weights.mean(1) if head is None else weights[:, head]
        return (guided_alignment_loss(attention, batch.alignment)
                / batch.alignment.sum().item())


@pytest.mark.parametrize(("arch", "heads"), [("transformer", 0), ("transformer", 1),
                                             ("gru", 0)])
def test_guided_training_teaches_the_aligning_heads_the_links(aligned_corpus, tmp_path, arch,
                                                              heads):
    corpus, links = aligned_corpus
    model = {"model.arch": arch, **({"train.lr": 3e-3} if arch == "gru" else {})}  # (slower)
    trainers = {}
    for name, extra in (("plain", model),
                        ("guided", {**model, "data.alignments": str(links),
                                    "train.alignment_weight": 1.0,
                                    "model.alignment_heads": heads})):
        trainer = Trainer(small(corpus, **extra), prepare_run_dir(tmp_path / name),
                          lambda event: None)
        trainer.run()
        trainers[name] = trainer
    data = trainers["guided"].corpus.train
    assert trainers["plain"].corpus.train.alignments is None
    batch = make_batch(data, np.arange(40))
    rows = batch.alignment.sum(-1)
    assert ((rows == 0) | torch.isclose(rows, torch.ones(()))).all() and rows.sum() > 100
    taught = None if heads == 0 else 0
    plain, guided = (attention_loss(trainers[name], batch, taught) for name in ("plain", "guided"))
    assert guided < 0.6 * plain, (plain, guided)
    if heads == 1:  # the other head was left to attend as it would
        untaught = attention_loss(trainers["guided"], batch, 1)
        assert untaught > 1.5 * guided, (guided, untaught)


def assert_gold_follows_the_links(data, rows) -> None:
    """Each target piece of the pairs `rows` attends (in the gold attention of their batch)
    to the source pieces of exactly the words its word is linked to."""
    batch, alignments = make_batch(data, np.asarray(rows)), data.alignments
    for row, i in enumerate(rows):
        source = piece_words(alignments.src_starts, data.src[i])
        target = piece_words(alignments.tgt_starts, data.tgt[i])
        for t, word in enumerate(target):
            linked = {s for s, w in alignments.links[i].tolist() if w == word}
            attended = batch.alignment[row, t].nonzero().flatten().tolist()
            assert {int(source[s]) for s in attended} == linked


def test_subword_sampling_keeps_the_word_links_of_each_epoch(aligned_corpus, tmp_path):
    corpus, links = aligned_corpus
    config = small(corpus, **{"data.alignments": str(links), "tokenizer.sampling_alpha": 0.5})
    trainer = Trainer(config, prepare_run_dir(tmp_path / "run"), lambda event: None)
    first, second = (trainer.corpus.for_epoch(seed) for seed in (1, 2))
    assert second.alignments is first.alignments is not None
    assert first.src != second.src  # each epoch its own pieces of the same words
    for data in (first, second):
        assert_gold_follows_the_links(data, range(20))


def test_a_model_of_two_target_languages_learns_each_ones_links(aligned_corpus, tmp_path):
    """German linked as in aligned_corpus, and a second target language, "fr" (the English
    itself), every word linked to the second source word: the tag that opens each source is
    no word, and the attention learns the links of both."""
    corpus, de_links = aligned_corpus
    english = read_sample("train", "en", CORPUS_PAIRS)
    (corpus / "train.fr").write_text("".join(f"{line}\n" for line in english))
    (corpus / "val.fr").write_text((corpus / "val.en").read_text())
    second = [min(1, len(line.split()) - 1) for line in english]
    fr_links = write_links(tmp_path / "fr.align", [
        " ".join(f"{word}-{k}" for k in range(len(line.split())))
        for word, line in zip(second, english)])
    trainers = {}
    for name, extra in (("plain", {}), ("guided", {"data.alignments": f"{de_links},{fr_links}",
                                                   "train.alignment_weight": 1.0})):
        settings = {"data.tgt_lang": "de,fr", "train.max_steps": 80, **extra}  # 40 a language
        trainer = Trainer(small(corpus, **settings),
                          prepare_run_dir(tmp_path / name), lambda event: None)
        trainer.run()
        trainers[name] = trainer
    data = trainers["guided"].corpus.train
    tags = trainers["guided"].corpus.tokenizer.tags
    french = [i for i, src in enumerate(data.src) if src[0] == tags["<2fr>"]]
    german = [i for i, src in enumerate(data.src) if src[0] == tags["<2de>"]]
    assert len(french) == len(german) == CORPUS_PAIRS
    assert data.alignments.links[french[3]].tolist() == [[second[3], k] for k in
                                                         range(len(english[3].split()))]
    for rows in (german[:20], french[:20]):
        assert_gold_follows_the_links(data, rows)
        batch = make_batch(data, np.asarray(rows))
        assert not batch.alignment[:, :, 0].any()  # the tag's column
        plain, guided = (attention_loss(trainers[name], batch) for name in ("plain", "guided"))
        assert guided < 0.8 * plain, (plain, guided)  # 0.41 and 0.71 of it when written


@pytest.mark.parametrize(("settings", "message"), [
    ({"model.arch": "gru", "model.attention": "none"},
     r"data.alignments: guided alignment teaches attention, and this GRU has none"),
    ({"data.tgt_lang": "de,fr"}, r"data.alignments: 1 file for 2 target languages \(de, "
                                 r"fr\); give one for each, in data.tgt_lang's order"),
    ({"data.alignments": "a,b"}, r"data.alignments: 2 files for 1 target language \(de\)"),
    ({"model.alignment_heads": 5}, r"model.alignment_heads must not exceed model.num_heads "
                                   r"\(5 > 4\)"),
    ({"model.alignment_heads": -1}, r"model.alignment_heads must not be negative \(got -1\)"),
    ({"model.arch": "gru", "data.alignments": "", "model.alignment_heads": 1},
     r"model.alignment_heads: the GRU's attention has one head; leave it 0"),
])
def test_guided_alignment_refuses_what_it_cannot_teach(settings, message):
    with pytest.raises(UserError, match=message):
        apply_overrides(preset("transformer"), {"data.alignments": "links.txt", **settings})


def test_links_given_a_weight_of_0_teach_nothing_and_ask_nothing():
    config = apply_overrides(preset("transformer"), {
        "data.alignments": "links.txt", "model.arch": "gru", "model.attention": "none",
        "train.alignment_weight": 0.0})
    assert not config.guided()


def test_each_alignment_file_is_made_absolute_for_the_runs_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = resolve_config(options={"data.tgt_lang": "de,fr",
                                     "data.alignments": "de.align,links/fr.align"})
    assert config.data.alignments == f"{tmp_path / 'de.align'},{tmp_path / 'links/fr.align'}"


def test_train_names_a_bad_alignment_file_in_one_line(aligned_corpus, tmp_path):
    corpus, _ = aligned_corpus
    bad = write_links(tmp_path / "bad.align", ["0-0"] * 5)
    result = CliRunner().invoke(app, ["train", "--data", str(corpus), "--alignments", str(bad),
                                      "--run", str(tmp_path / "run"), "--max-steps", "1",
                                      "--set", "tokenizer.vocab_size=300"])
    assert result.exit_code == 1
    assert f"{bad}: 5 lines of alignments for {CORPUS_PAIRS} training pairs" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()  # no half-made run left behind


def test_grow_diag_final_and_grows_the_shared_links_then_adds_lone_words():
    forward = {(0, 0), (1, 1), (2, 3), (4, 5)}
    reverse = {(0, 0), (1, 1), (2, 2), (3, 3), (1, 5)}
    # shared: 0-0 1-1; grown beside them: 2-2 (source 2 and target 2 free), then 2-3 (target
    # 3 free) and 3-3 (source 3 free); 1-5 and 4-5 are next to none: 4-5 joins last, its two
    # words free, and 1-5 then finds target 5 taken
    assert grow_diag_final_and(forward, reverse) == {(0, 0), (1, 1), (2, 2), (2, 3), (3, 3),
                                                     (4, 5)}
    assert grow_diag_final_and(set(), {(0, 1)}) == {(0, 1)}


def test_data_symmetrize_writes_a_file_train_reads(aligned_corpus, tmp_path):
    forward = write_links(tmp_path / "forward.align", ["0-0 1-1 2-3", "", "0-1"])
    reverse = write_links(tmp_path / "reverse.align", ["0-0 1-1 2-2 3-3", "0-0", "1-1"])
    out = tmp_path / "train.align"
    result = CliRunner().invoke(app, ["data", "symmetrize", str(forward), str(reverse),
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines() == ["0-0 1-1 2-2 2-3 3-3", "0-0", "0-1"]
    shorter = write_links(tmp_path / "short.align", ["0-0"])
    result = CliRunner().invoke(app, ["data", "symmetrize", str(forward), str(shorter)])
    assert result.exit_code == 1
    assert f"{shorter} has 1 line, {forward} more" in result.output
    bad = write_links(tmp_path / "bad.align", ["0-0", "1=1", "0-0"])
    result = CliRunner().invoke(app, ["data", "symmetrize", str(forward), str(bad),
                                      "-o", str(tmp_path / "none.align")])
    assert result.exit_code == 1 and f"{bad}:2: '1=1' is no link" in result.output
    assert not (tmp_path / "none.align").exists()


def test_a_guided_run_resumes_exactly(aligned_corpus, tmp_path):
    """The resumed run reads the alignments again from its config, and its losses, the
    attention term's included, are those of the run that was not stopped."""
    corpus, links = aligned_corpus
    config = small(corpus, **{"data.alignments": str(links), "train.max_steps": 12})
    whole = prepare_run_dir(tmp_path / "whole")
    Trainer(config, whole, lambda event: None).run()
    broken = prepare_run_dir(tmp_path / "broken")
    interrupted(config, broken, 5)
    resume(broken)
    assert len(step_losses(whole)) == 12
    assert step_losses(broken) == step_losses(whole)  # bitwise equal floats
