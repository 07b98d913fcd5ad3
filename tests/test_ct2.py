"""Export to CTranslate2: the exported model scores every token as nmt's model does, and
CTranslate2's search finds nmt's translations (greedy and beam, n-best lists and scores), for
pre- and post-norm, tied and separate embeddings, joint and separate vocabularies; and
`nmt export` / `nmt translate --engine ctranslate2` as a user runs them."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import torch
from test_cli import invoke, one_line_error

from nmt_cli.config import DecodeConfig, apply_overrides, preset
from nmt_cli.special_tokens import EOS_ID, SOS_ID
from nmt_cli.training import train
from nmt_cli.translate import Translator

from conftest import read_sample, write_corpus

TEST = read_sample("test", "en")  # the sample corpus's 200 test sentences

TINY = {"model.d_model": 32, "model.d_ff": 64, "model.num_heads": 4, "model.dropout": 0.0,
        "model.num_encoder_layers": 2, "model.num_decoder_layers": 1,
        "tokenizer.vocab_size": 300, "train.batch_tokens": 1024, "train.lr": 3e-3,
        "train.warmup_steps": 30, "train.max_steps": 120, "train.validate_every": 120}
# pre/post-norm, output layer tied or not, one vocabulary or two, 1-2 decoder layers, word
# alignments read from every head of the aligning layer or from its first
VARIANTS = {
    "prenorm-tied-joint-2-layers-1-aligning-head": {"model.norm_first": True,
                                                    "model.num_decoder_layers": 2,
                                                    "model.alignment_heads": 1},
    "postnorm-untied": {"model.norm_first": False, "model.tie_embeddings": False},
    "prenorm-tied-separate-vocab": {"tokenizer.joint": False,
                                              "tokenizer.model_type": "bpe"},
}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Models this small gain nothing from a second thread, and lose much on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def train_tiny(run_dir: Path, changes: dict) -> Path:
    """120 steps on the bundled sample: seconds, and outputs that differ by sentence."""
    return train(apply_overrides(preset("transformer"), {**TINY, **changes}), run_dir)


@pytest.fixture(scope="module", params=list(VARIANTS))
def exported(request, tmp_path_factory) -> tuple[Translator, object]:
    """(nmt's translator, CTranslate2's) of one run, exported in float32."""
    pytest.importorskip("ctranslate2")
    from nmt_cli.ct2 import CTranslate2Translator
    from nmt_cli.ct2_export import export_ctranslate2

    run = train_tiny(tmp_path_factory.mktemp("ct2") / "run", VARIANTS[request.param])
    export = export_ctranslate2(run, run.parent / "export")
    return Translator.from_run(run, "cpu"), CTranslate2Translator.from_dir(export, "cpu")


def test_every_token_gets_the_same_log_probability(exported):
    """Teacher-forced log-probabilities of reference translations: the same model."""
    nmt, ct2 = exported
    model, tokenizer = nmt.run.model, nmt.run.tokenizer
    sources, targets = TEST[:20], read_sample("test", "de", 20)
    src_pieces = [tokenizer.src.encode(s, out_type=str) for s in sources]
    tgt_ids = tokenizer.encode_tgt(targets)
    scored = ct2.translator.score_batch(src_pieces, [tokenizer.tgt.id_to_piece(t)
                                                     for t in tgt_ids])
    for src, tgt, result in zip(tokenizer.encode_src(sources), tgt_ids, scored):
        with torch.no_grad():
            logits = model(torch.tensor([src + [EOS_ID]]), torch.tensor([[SOS_ID] + tgt]))[0]
        expected = torch.log_softmax(logits, -1)[torch.arange(len(tgt) + 1), tgt + [EOS_ID]]
        assert result.log_probs == pytest.approx(expected.tolist(), abs=2e-4)


TIGHT = {"max_len_a": 0.5, "max_len_b": 2, "min_len": 3, "batch_size": 7}  # limits bite


@pytest.mark.parametrize("config", [DecodeConfig(beam=1), DecodeConfig(beam=5),
                                    DecodeConfig(beam=1, **TIGHT),
                                    DecodeConfig(beam=4, alpha=0.0, **TIGHT)],
                         ids=["greedy", "beam5", "greedy-limits", "beam4-limits"])
def test_ctranslate2_finds_nmts_translations(exported, config):
    nmt, ct2 = exported
    ours = nmt.translate_nbest(TEST, config, nbest=config.beam)
    theirs = ct2.translate_nbest(TEST, config, nbest=config.beam)
    assert len({hyps[0].text for hyps in ours}) >= 15  # the check means something
    assert_same_search(ours, theirs)


@pytest.mark.parametrize("config", [DecodeConfig(beam=1, no_repeat_ngram=1),
                                    DecodeConfig(beam=5, no_repeat_ngram=2)],
                         ids=["greedy-1", "beam5-2"])
def test_ctranslate2_rules_out_repeated_ngrams_as_nmt_does(exported, config):
    nmt, ct2 = exported
    ours = nmt.translate_nbest(TEST, config, nbest=config.beam)
    unblocked = nmt.translate_nbest(TEST, dataclasses.replace(config, no_repeat_ngram=0))
    assert [h[0].text for h in ours] != [h[0].text for h in unblocked]  # it means something
    assert_same_search(ours, ct2.translate_nbest(TEST, config, nbest=config.beam))


@pytest.mark.parametrize("config", [DecodeConfig(beam=1), DecodeConfig(beam=5),
                                    DecodeConfig(beam=4, alpha=0.0, **TIGHT)],
                         ids=["greedy", "beam5", "beam4-limits"])
def test_ctranslate2_follows_target_prefixes_as_nmt_does(exported, config):
    """The first one to three words of the reference as the prefix of two lines in three (of
    every line under the tight limits, where a long one takes all the room)."""
    nmt, ct2 = exported
    prefixes = [" ".join(ref.split()[: 1 + i % 3]) if i % 3 or config.min_len else ""
                for i, ref in enumerate(read_sample("test", "de"))]
    ours = nmt.translate_nbest(TEST, config, nbest=config.beam, prefixes=prefixes)
    assert [h[0].text for h in ours] != [h[0].text for h in nmt.translate_nbest(TEST, config)]
    assert all(h.text.startswith(prefix) for prefix, hyps in zip(prefixes, ours) for h in hyps)
    assert_same_search(ours, ct2.translate_nbest(TEST, config, nbest=config.beam,
                                                 prefixes=prefixes))


def test_ctranslate2_gives_nmts_word_alignments(exported, tmp_path):
    """The export's attention is the one nmt aligns with: the aligning layer's, averaged over
    every head or the first (model.alignment_heads)."""
    nmt, ct2 = exported
    config = DecodeConfig(beam=3)
    ours = nmt.translate_nbest(TEST, config, 3, alignment=True)
    theirs = ct2.translate_nbest(TEST, config, 3, alignment=True)
    pairs = [(h, g) for a, b in zip(ours, theirs) for h, g in zip(a, b) if h.tokens == g.tokens]
    assert len(pairs) >= 0.9 * 3 * len(TEST)
    assert sum(h.alignment == g.alignment for h, g in pairs) >= 0.98 * len(pairs)
    assert sum(len(set(h.alignment)) > 1 for h, _ in pairs) >= 0.9 * len(pairs)  # not trivial
    # so inline markup goes back to the same places
    lines = [re.sub(r"^(\S+ )(\S+)", r"\1<i>\2</i>", line) + "<br/>" for line in TEST]
    ours, theirs = ([h for _, hyps in engine.translate_nbest_stream(lines, config, 3, markup=True)
                     for h in hyps] for engine in (nmt, ct2))
    pairs = [(h, g) for h, g in zip(ours, theirs) if h.tokens == g.tokens]
    assert len(pairs) >= 0.9 * 3 * len(TEST)
    assert sum(h.text == g.text for h, g in pairs) >= 0.98 * len(pairs)
    assert all(h.text.count("<i>") == h.text.count("<br/>") == 1 for h in ours + theirs)


def assert_same_search(ours, theirs) -> None:
    """The same best translations and n-best lists (nearly always), and the same score for
    the same hypothesis."""
    same = [a[0].text == b[0].text for a, b in zip(ours, theirs)]
    assert sum(same) >= 0.98 * len(TEST)
    same_lists = [[h.text for h in a] == [h.text for h in b] for a, b in zip(ours, theirs)]
    assert sum(same_lists) >= 0.95 * len(TEST)
    for a, b in zip(ours, theirs):  # the same hypothesis gets the same score
        for h, g in zip(a, b):
            if h.tokens == g.tokens:
                assert (g.score, g.log_prob) == pytest.approx((h.score, h.log_prob), abs=1e-3)


def test_blank_and_overlong_lines(exported):
    nmt, ct2 = exported
    lines = ["", "   ", " ".join(["house"] * 1100), TEST[0]]
    ours, theirs = nmt.translate(lines), ct2.translate(lines)
    assert theirs[:2] == ["", ""] and theirs == ours


def test_ctranslate2_splits_sentences_as_nmt_does(exported):
    ct2 = exported[1]
    lines = [" ".join(TEST[:3]), TEST[3]]
    config = DecodeConfig(split_sentences=True)
    ours, theirs = (engine.translate_nbest(lines, config, alignment=True) for engine in exported)
    assert [[(h.text, h.alignment) for h in hyps] for hyps in theirs] == [
        [(h.text, h.alignment) for h in hyps] for hyps in ours]
    assert theirs[0][0].text == " ".join(ct2.translate(TEST[:3]))


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory) -> Path:
    """A run of the pre-norm variant, exported by the command line into RUN/ctranslate2."""
    pytest.importorskip("ctranslate2")
    run = train_tiny(tmp_path_factory.mktemp("cli") / "run", {"train.max_steps": 30})
    result = invoke("export", str(run), "--format", "ctranslate2")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(run / "ctranslate2")
    return run


def test_translate_and_eval_with_either_engine(cli_run, tmp_path):
    source = tmp_path / "in.en"
    source.write_text("".join(f"{line}\n" for line in TEST[:30]), encoding="utf-8")
    outputs = {}
    for engine, run in (("torch", cli_run), ("ctranslate2", cli_run),
                        ("ctranslate2", cli_run / "ctranslate2")):
        result = invoke("translate", "--engine", engine, "--run", str(run), "-i", str(source),
                        "--beam", "3", "--nbest", "2", "--format", "tsv")
        assert result.exit_code == 0, result.output
        rows = [line.split("\t") for line in result.stdout.splitlines()]
        outputs.setdefault(engine, []).append(rows)
    torch_rows, (ct2_rows, export_rows) = outputs["torch"][0], outputs["ctranslate2"]
    assert ct2_rows == export_rows  # a run directory or its export: the same
    assert len(torch_rows) == 60
    assert [r[:2] + r[4:] for r in ct2_rows] == [r[:2] + r[4:] for r in torch_rows]
    assert [float(x) for r in ct2_rows for x in r[2:4]] == pytest.approx(
        [float(x) for r in torch_rows for x in r[2:4]], abs=2e-3)
    scores = set()  # the run's test split, whichever engine and directory
    for engine, run in (("torch", cli_run), ("ctranslate2", cli_run),
                        ("ctranslate2", cli_run / "ctranslate2")):
        result = invoke("eval", "--engine", engine, "--run", str(run), "--json")
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        scores.add(json.dumps(out["scores"]))
        assert out["decoding"]["engine"] == engine  # what made the translations, recorded
    assert len(scores) == 1


def test_int8_weights_compute_the_rest_in_the_precision_asked_for():
    from nmt_cli.ct2 import compute_type

    assert [compute_type(precision, "int8") for precision in ("auto", "fp32", "bf16")] == [
        "int8", "int8_float32", "int8_bfloat16"]  # bf16 was dropped: int8 alone
    assert [compute_type(precision, "none") for precision in ("auto", "fp16")] == [
        "default", "float16"]


def test_export_errors_are_one_line(cli_run, tmp_path):
    (tmp_path / "in.en").write_text(TEST[0] + "\n", encoding="utf-8")
    one_line_error(invoke("export", str(cli_run), "--format", "ctranslate2"),
                   "already holds files", "--force")
    assert invoke("export", str(cli_run), "--format", "ctranslate2", "--force",
                  "--quantization", "int8").exit_code == 0
    int8 = invoke("translate", "--engine", "ctranslate2", "--run", str(cli_run), TEST[0])
    assert int8.exit_code == 0 and int8.stdout.strip()
    huge = invoke("translate", "--engine", "ctranslate2", "--run", str(cli_run), "--batch-size",
                  str(2**30), TEST[0])  # CTranslate2 made room for that many: bad_alloc
    assert huge.exit_code == 0 and huge.stdout == int8.stdout
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine\n")
    for out, message in ((cli_run, "it holds the run"), (cli_run.parent, "it holds the run"),
                         (other, "not an earlier export"), (tmp_path / "in.en", "not a directory"),
                         (tmp_path / "in.en" / "x", "in.en is a file, not a directory")):
        one_line_error(invoke("export", str(cli_run), "--format", "ctranslate2", "-o", str(out),
                              "--force"), f"-o {out}: ", message)
    assert (cli_run / "model.safetensors").is_file() and (other / "keep.txt").is_file()
    one_line_error(invoke("export", str(cli_run / "ctranslate2"), "--format", "ctranslate2",
                          "-o", str(tmp_path / "again")), "a CTranslate2 export, not a run")
    for command in (["translate", "Hello."], ["eval"]):  # was: expected a "config" object
        one_line_error(invoke(*command, "--run", str(cli_run / "ctranslate2")),
                       "a CTranslate2 export, not a run directory", "--engine ctranslate2")
    one_line_error(invoke("export", str(tmp_path / "nowhere"), "--format", "ctranslate2"),
                   "nowhere")
    one_line_error(invoke("translate", "--engine", "ctranslate2", "--run", str(tmp_path),
                          "Hello."), "no CTranslate2 export", "nmt export")
    one_line_error(invoke("translate", "--engine", "ctranslate2", "--run", str(cli_run),
                          "--format", "jsonl", "--attention", "Hello."), "--attention")
    from nmt_cli.ct2 import CTranslate2Translator

    aligned = invoke("translate", "--engine", "ctranslate2", "--run", str(cli_run),
                     "--alignment", "-i", str(tmp_path / "in.en"))
    (found,) = CTranslate2Translator.from_dir(cli_run, "cpu").translate_nbest(
        [TEST[0]], DecodeConfig(), alignment=True)
    assert aligned.exit_code == 0 and aligned.stdout == (
        f"{found[0].text} ||| {' '.join(f'{s}-{t}' for s, t in found[0].alignment)}\n")
    meta_file = cli_run / "ctranslate2" / "nmt-export.json"
    kept = meta_file.read_text()
    meta = json.loads(kept)
    try:
        for layer in (None, -1):  # made before alignments, or for another layer
            if layer is None:
                del meta["alignment_layer"]
            else:
                meta["alignment_layer"] = layer
            meta_file.write_text(json.dumps(meta))
            one_line_error(invoke("translate", "--engine", "ctranslate2", "--run", str(cli_run),
                                  "--alignment", "Hello."), "--alignment: this export was made "
                           "before", f"nmt export {cli_run} --format ctranslate2 --force")
    finally:
        meta_file.write_text(kept)
    one_line_error(invoke("translate", "--engine", "ctranslate2", "--run", str(cli_run),
                          "--device", "mps", "Hello."), "mps")


def test_an_export_of_weights_replaced_since_or_damaged_is_a_one_line_error(cli_run, tmp_path):
    """The run's weights, replaced since it was exported (resumed, fine-tuned, or EMA weights
    copied over), would be translated by CTranslate2 as they were; a copied run's export is
    its own; an export edited by hand fails in one line."""
    from safetensors.torch import load_file, save_file

    run = tmp_path / "run"
    shutil.copytree(cli_run, run)
    copied = invoke("translate", "--engine", "ctranslate2", "--run", str(run), TEST[0])
    assert copied.exit_code == 0, copied.output
    weights = load_file(run / "model.safetensors")
    name = next(iter(weights))
    save_file({**weights, name: weights[name] + 0.01}, run / "model.safetensors",
              metadata={"format": "pt"})
    one_line_error(invoke("translate", "--engine", "ctranslate2", "--run", str(run), TEST[0]),
                   f"{run / 'ctranslate2'}: exported from weights of {run} replaced since",
                   f"nmt export {run} --format ctranslate2 --force")
    assert invoke("export", str(run), "--format", "ctranslate2", "--force").exit_code == 0
    assert invoke("translate", "--engine", "ctranslate2", "--run", str(run),
                  TEST[0]).exit_code == 0
    meta_file = run / "ctranslate2" / "nmt-export.json"  # positions the model lacks
    meta_file.write_text(json.dumps({**json.loads(meta_file.read_text()),
                                     "max_positions": 10**9}))
    one_line_error(invoke("translate", "--engine", "ctranslate2", "--run", str(run),
                          "a. " * 600), "CTranslate2 failed", "export the run again")


def test_a_gru_run_is_explained(tmp_path):
    pytest.importorskip("ctranslate2")
    corpus = write_corpus(tmp_path / "corpus", {
        "train": (read_sample("train", "en", 100), read_sample("train", "de", 100)),
        "val": (read_sample("val", "en", 5), read_sample("val", "de", 5))})
    run = train(apply_overrides(preset("gru"), {
        "data.data_dir": str(corpus), "model.d_model": 16, "tokenizer.vocab_size": 100,
        "train.max_steps": 1, "train.validate_every": 1}), tmp_path / "gru")
    one_line_error(invoke("export", str(run), "--format", "ctranslate2"),
                   "GRU run", "CTranslate2 has no such architecture")
    one_line_error(invoke("translate", "--engine", "ctranslate2", "--run", str(run), "Hi."),
                   "a GRU run, and CTranslate2 runs Transformers only", "--engine torch")


def test_without_ctranslate2_one_line_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # import ctranslate2 fails
    for args in (("export", str(tmp_path), "--format", "ctranslate2"),
                 ("translate", "--engine", "ctranslate2", "--run", str(tmp_path), "Hello.")):
        one_line_error(invoke(*args), 'pip install "nmt-cli[ct2]"')


def test_serve_decodes_with_ctranslate2(cli_run):
    """`nmt serve EXPORT --engine ctranslate2`: a real server whose answers to concurrent
    clients are CTranslate2's own translations, and whose /info describes the source run."""
    from concurrent.futures import ThreadPoolExecutor

    from test_serve import Server, call

    from nmt_cli.ct2 import CTranslate2Translator

    lines = TEST[:40]
    wanted = CTranslate2Translator.from_dir(cli_run, "cpu").translate_nbest(
        lines, DecodeConfig(beam=3), alignment=True)
    server = Server(cli_run / "ctranslate2", "--engine", "ctranslate2", "--beam", "3")
    requests = [{"text": line, "alignment": i % 2 == 0} for i, line in enumerate(lines)]
    try:
        with ThreadPoolExecutor(8) as clients:
            answers = list(clients.map(
                lambda request: call(server.url + "/translate", request), requests))
        assert [a[0] for a in answers] == [200] * len(lines)
        assert [a[2]["translations"][0]["text"] for a in answers] == [h[0].text for h in wanted]
        assert [a[2]["translations"][0].get("alignment") for a in answers] == [
            [list(link) for link in h[0].alignment] if i % 2 == 0 else None
            for i, h in enumerate(wanted)]
        status, _, info = call(server.url + "/info")
        assert status == 200 and (info["engine"], info["run"]) == ("ctranslate2", cli_run.name)
        assert (info["architecture"], info["source_language"]) == ("transformer", "en")
        assert call(server.url + "/health")[2]["batches"] < len(lines)
    finally:
        assert server.stop() == 0
