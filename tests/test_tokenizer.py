"""SentencePiece: fixed special ids, joint or separate vocabularies, unigram or BPE, sampling."""

import pytest

from nmt_cli.config import TokenizerConfig, apply_overrides, preset
from nmt_cli.errors import UserError
from nmt_cli.tokenizer import EOS_ID, PAD_ID, SOS_ID, UNK_ID, Tokenizer
from nmt_cli.training import Trainer, prepare_run_dir

from conftest import read_sample


def test_joint_unigram_model_has_fixed_special_ids(tmp_path):
    src, tgt = read_sample("train", "en", 500), read_sample("train", "de", 500)
    tokenizer = Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=400), tmp_path)
    assert tokenizer.joint and (tmp_path / "spm.model").is_file()
    pieces = [tokenizer.tgt.id_to_piece(i) for i in (PAD_ID, UNK_ID, SOS_ID, EOS_ID)]
    assert pieces == ["<pad>", "<unk>", "<sos>", "<eos>"]
    ids = tokenizer.encode_tgt([tgt[0]])
    assert min(ids[0]) > EOS_ID
    assert tokenizer.decode_tgt(ids) == [tgt[0]]


def test_separate_bpe_models(tmp_path):
    src, tgt = read_sample("train", "en", 500), read_sample("train", "de", 500)
    config = TokenizerConfig(vocab_size=300, model_type="bpe", joint=False)
    Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=300), tmp_path)  # one made before,
    tokenizer = Tokenizer.train(src, tgt, config, tmp_path)  # which this one replaces
    assert not tokenizer.joint and not (tmp_path / "spm.model").exists()
    assert (tmp_path / "spm.src.model").is_file() and (tmp_path / "spm.tgt.model").is_file()
    reloaded = Tokenizer.load(tmp_path)
    assert reloaded.encode_src(src[:3]) == tokenizer.encode_src(src[:3])
    assert reloaded.decode_tgt(reloaded.encode_tgt(tgt[:3])) == tgt[:3]


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_sampled_segmentations_follow_the_seed_and_spell_the_same_text(tmp_path, model_type):
    src, tgt = read_sample("train", "en", 500), read_sample("train", "de", 500)
    tokenizer = Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=400, model_type=model_type),
                                tmp_path)
    first, again, other = (tokenizer.sample(src[:50], tgt[:50], 0.1, -1, seed)
                           for seed in (1, 1, 2))
    assert first == again and first != other
    assert first[0] != tokenizer.encode_src(src[:50])  # not the best segmentation
    assert tokenizer.src.decode(first[0]) == src[:50]
    assert tokenizer.decode_tgt(first[1]) == tokenizer.decode_tgt(other[1]) == tgt[:50]


UNSEEN = "Ein Käse für 寿司-Fans 😀."  # characters the sample's training text lacks


@pytest.mark.parametrize("config", [TokenizerConfig(vocab_size=600, byte_fallback=True),
                                    TokenizerConfig(vocab_size=500, byte_fallback=True,
                                                    model_type="bpe", joint=False)],
                         ids=["joint-unigram", "separate-bpe"])
def test_byte_fallback_spells_unseen_characters_in_bytes(tmp_path, config):
    src, tgt = read_sample("train", "en", 500), read_sample("train", "de", 500)
    assert not any(c in "".join(src + tgt) for c in "寿司😀")
    tokenizer = Tokenizer.train(src, tgt, config, tmp_path, tags=["<2de>", "<2fr>"])
    assert tokenizer.tags == {"<2de>": 4, "<2fr>": 5}  # still right after the special pieces
    ids = tokenizer.encode_tgt([UNSEEN])[0]
    assert UNK_ID not in ids and tokenizer.decode_tgt([ids]) == [UNSEEN]
    assert "<0xF0>" in tokenizer.tgt.id_to_piece(ids)  # the emoji's first byte
    assert UNK_ID not in tokenizer.encode_src([f"<2fr> {UNSEEN}"])[0]
    broken = [tokenizer.tgt.piece_to_id("<0xE5>")]  # a translation cut inside a character
    assert tokenizer.decode_tgt([broken]) == ["\ufffd"]
    (tmp_path / "plain").mkdir()
    plain = Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=400), tmp_path / "plain")
    assert UNK_ID in plain.encode_tgt([UNSEEN])[0]  # without it: <unk>, shown as ⁇


def test_a_vocabulary_too_small_for_the_corpus_says_how_large_it_must_be(tmp_path):
    src, tgt = read_sample("train", "en", 500), read_sample("train", "de", 500)
    with pytest.raises(UserError, match=r"tokenizer.vocab_size 200 is too small for this corpus: "
                       r"its characters, 256 bytes \(byte_fallback\) and the special pieces "
                       r"need at least \d+$"):
        Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=200, byte_fallback=True), tmp_path)
    with pytest.raises(UserError, match=r"tokenizer.vocab_size 4 is too small: the special "
                                        r"pieces alone take 4"):  # not "too large?"
        Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=4), tmp_path)
    long = [" ".join(src[:150])] * 20  # over 4,192 bytes each: SentencePiece skips them all
    assert min(len(line.encode()) for line in long) > 4192
    with pytest.raises(UserError, match=r"^SentencePiece found no line to train the tokenizer "
                                        r"on: it skips lines over 4,192 bytes"):
        Tokenizer.train(long, long, TokenizerConfig(vocab_size=100), tmp_path)


def test_a_vocabulary_larger_than_the_corpus_gives_is_reported(small_corpus, tmp_path):
    """SentencePiece stops where the text runs out of pieces; training says how many."""
    config = apply_overrides(preset("transformer"), {
        "data.data_dir": str(small_corpus), "tokenizer.vocab_size": 100_000,
        "model.d_model": 32, "model.d_ff": 64})
    events = []
    trainer = Trainer(config, prepare_run_dir(tmp_path / "run"), events.append)
    pieces = trainer.corpus.tokenizer.src_vocab_size
    assert 100 < pieces < 100_000
    assert f"tokenizer: {pieces:,} pieces, fewer than tokenizer.vocab_size 100,000: all that " \
           "this corpus gives" in [e.get("message") for e in events]
