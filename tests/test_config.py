"""Configuration: presets, TOML and --set overrides checked against the dataclass fields."""

import pytest

from nmt_cli.config import (
    ARCHS,
    ATTENTION_SCORES,
    CHOICES,
    DEFAULT_PRESET,
    DEVICES,
    PRECISIONS,
    PRESETS,
    Config,
    DecodeConfig,
    UserError,
    apply_overrides,
    from_dict,
    load_toml,
    parse_duration,
    parse_set,
    preset,
    resolve_config,
    resume_config,
    to_dict,
    unread_settings,
)


def test_overrides_are_typed():
    config = apply_overrides(Config(), parse_set(["model.d_model=64", "model.norm_first=false",
                                                  "train.lr=0.002", "train.max_time=20m"]))
    assert config.model.d_model == 64 and config.model.norm_first is False
    assert config.train.lr == 0.002 and config.train.max_time == 1200.0


def test_unknown_key_lists_the_valid_ones():
    with pytest.raises(UserError, match=r"unknown setting 'model.layers'.*model\.d_model"):
        apply_overrides(Config(), {"model.layers": "3"})


@pytest.mark.parametrize("table", [{"model": [1]}, {"train": 3}])
def test_a_section_given_a_value_is_named_as_a_section(table):
    """`model = [1]` in a config file (or --set train=3): a section, not an unknown key."""
    section = next(iter(table))
    with pytest.raises(UserError, match=rf"^'{section}' is a section, not a setting: name one "
                                        rf"of its settings, such as {section}\.\w+$"):
        from_dict(table)


@pytest.mark.parametrize(("key", "value"), [("model.d_model", "big"), ("model.arch", "lstm"),
                                            ("model.norm_first", "maybe"),
                                            ("train.device", "tpu"),
                                            ("tokenizer.sampling_alpha", "1.5"),
                                            ("tokenizer.sampling_nbest", "1"),
                                            ("train.best_metric", "ter"),
                                            ("train.attention_plots", "-1"),
                                            ("train.attention_plots", "101"),
                                            ("data.max_len_ratio", "0.5")])
def test_bad_values_are_errors(key, value):
    with pytest.raises(UserError, match=key.split(".")[1]):
        apply_overrides(Config(), {key: value})


def test_attention_plots_need_a_model_with_attention():
    with pytest.raises(UserError, match="train.attention_plots: this GRU has no attention"):
        apply_overrides(Config(), {"model.arch": "gru", "model.attention": "none",
                                   "train.attention_plots": "1"})
    apply_overrides(Config(), {"model.arch": "gru", "train.attention_plots": "1"})


def test_linear_schedule_needs_a_limit_to_decay_to():
    with pytest.raises(UserError, match="train.max_steps, train.max_time or train.epochs"):
        apply_overrides(Config(), {"train.schedule": "linear"})
    config = apply_overrides(Config(), {"train.schedule": "linear", "train.max_time": "20m"})
    assert config.train.max_time == 1200.0


def test_toml_file(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text('[model]\narch = "gru"\nattention = "dot"\n[train]\nmax_steps = 10\n')
    config = apply_overrides(Config(), load_toml(path))
    assert (config.model.arch, config.model.attention, config.train.max_steps) == ("gru", "dot", 10)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # as Windows editors save it
    assert load_toml(path) == {"model.arch": "gru", "model.attention": "dot",
                               "train.max_steps": 10}
    path.write_text("[model\n")
    with pytest.raises(UserError, match="invalid TOML"):
        load_toml(path)


def test_round_trip_and_presets():
    config = preset("gru")
    assert config.model.arch == "gru"
    assert from_dict(to_dict(config)) == config
    with pytest.raises(UserError, match="unknown preset"):
        preset("nope")
    for name in PRESETS:
        assert from_dict(to_dict(preset(name))) == preset(name)
    assert preset("multi30k-transformer").model.d_model == 256
    hour, twenty = preset("multi30k-transformer"), preset("multi30k-transformer-20m")
    assert (hour.model.dropout, hour.train.max_time) == (0.2, 3600.0)
    assert (twenty.model.dropout, twenty.train.max_time) == (0.1, 1200.0)
    assert hour.train.lr == twenty.train.lr == 2e-3 and twenty.train.ema_decay == 0.999
    assert (hour.train.weight_decay, twenty.train.weight_decay) == (0.0, 0.3)


def test_durations():
    assert parse_duration("90") == 90 and parse_duration("1h30m") == 5400
    with pytest.raises(UserError, match="invalid duration"):
        parse_duration("soon")
    with pytest.raises(UserError, match="'1h30': 30 has no unit"):  # not 3,630 seconds
        parse_duration("1h30")


def test_resolve_config_applies_sources_in_the_stated_order(tmp_path):
    toml = tmp_path / "settings.toml"
    toml.write_text("[model]\nd_model = 96\nnum_heads = 4\n[train]\nlr = 0.002\nseed = 7\n")
    # preset < TOML < --set < options
    config = resolve_config("gru", toml, ["train.lr=0.003", "train.seed=8"], {"train.seed": 9})
    assert config.model.arch == "gru"  # from the preset
    assert config.model.d_model == 96  # TOML over the preset's 128
    assert config.train.lr == 0.003  # --set over TOML
    assert config.train.seed == 9  # an option over --set
    assert resolve_config(options={"model.arch": "gru"}) == preset("gru")  # preset from --arch
    assert resolve_config() == preset(DEFAULT_PRESET)


def test_the_model_family_named_anywhere_chooses_the_preset(tmp_path):
    """`--set model.arch=gru` or a TOML file's arch trained a GRU with the Transformer preset's
    warmup schedule, as `--arch gru` did not; the family that wins now names the preset."""
    gru = tmp_path / "gru.toml"
    gru.write_text('[model]\narch = "gru"\n')
    assert resolve_config(settings=["model.arch=gru"]) == preset("gru")
    assert resolve_config(config_file=gru) == preset("gru")
    assert resolve_config(config_file=gru, options={"model.arch": "transformer"}) == preset(
        "transformer")  # the option wins over the file, and names the preset
    assert resolve_config("multi30k-gru", settings=["model.arch=gru"]) == preset("multi30k-gru")
    with pytest.raises(UserError, match="model.arch must be one of"):
        resolve_config(settings=["model.arch=rnn"])


def test_an_attention_score_for_a_transformer_is_refused_not_ignored():
    """model.attention chooses the GRU's score; a Transformer given one trained as if it had
    not been (a learner asking for no attention got multi-head attention)."""
    with pytest.raises(UserError, match=r"--set model.attention: chooses the GRU's attention "
                                        r"score; .* \(--arch gru\)"):
        resolve_config(settings=["model.attention=none"])
    assert resolve_config(settings=["model.attention=none"],
                          options={"model.arch": "gru"}).model.attention == "none"
    assert resolve_config("gru", settings=["model.attention=dot"]).model.attention == "dot"


def test_a_grus_transformer_settings_are_named_as_unread():
    """A GRU reads no heads, layers, feed-forward size or norm placement: train notes the
    ones given (a list of settings shared by both families may hold them)."""
    given = {"model.d_ff": 64, "model.num_encoder_layers": 2, "model.d_model": 32,
             "model.num_heads": 2, "model.norm_first": False, "model.num_decoder_layers": 1}
    gru = resolve_config(options={"model.arch": "gru"})
    assert [key for key, _ in unread_settings(gru, given)] == [
        "model.d_ff", "model.num_encoder_layers", "model.num_heads", "model.norm_first",
        "model.num_decoder_layers"]
    assert unread_settings(resolve_config(), given) == []


def test_a_warmup_without_a_schedule_that_warms_and_frozen_embeddings_of_nothing_are_noted():
    """multi30k-gru's plateau schedule (and constant) took train.warmup_steps=1000 without a
    word, as a run without pretrained vectors or a parent took model.freeze_embeddings."""
    given = {"train.warmup_steps": 1000, "model.freeze_embeddings": True}
    for name, schedule in (("multi30k-gru", "plateau"), ("gru", "constant")):
        config = resolve_config(name, settings=[f"{k}={v}" for k, v in given.items()])
        assert unread_settings(config, given) == [
            ("train.warmup_steps", f"the {schedule} schedule has no warmup (inverse_sqrt and "
                                   "linear have)"),
            ("model.freeze_embeddings", "it keeps fixed the embeddings that pretrained vectors "
             "(model.src_embeddings, model.tgt_embeddings) or a parent run "
             "(train.finetune_from) start; none here")]
    warming = resolve_config("transformer", settings=["train.warmup_steps=1000"])
    assert unread_settings(warming, {"train.warmup_steps": 1000}) == []


def test_a_limit_option_replaces_every_earlier_limit():
    config = resolve_config("multi30k-transformer", options={"train.max_steps": 5})
    assert (config.train.max_steps, config.train.max_time) == (5, 0.0)
    kept = resolve_config("multi30k-transformer", settings=["train.max_steps=5"])
    assert (kept.train.max_steps, kept.train.max_time) == (5, 3600.0)  # --set only adds
    replaced = resolve_config(settings=["train.max_time=5m"], options={"train.max_steps": 5})
    assert (replaced.train.max_steps, replaced.train.max_time) == (5, 0.0)
    # a --set value an option replaces is checked all the same
    for setting, options, message in (
            ("train.max_steps=-5", {"train.max_time": "1m"}, "must not be negative"),
            ("train.max_time=-5", {"train.max_steps": 5}, "invalid duration '-5'"),
            ("train.max_time=5x", {"train.epochs": 1}, "5x"),
            ("train.max_time=nan", {"train.max_time": "1m"}, "invalid duration 'nan'"),
            ("train.epochs=1.5", {"train.epochs": 2}, "train.epochs"),
            ("train.seed=abc", {"train.seed": 1}, "train.seed")):
        with pytest.raises(UserError, match=message):
            resolve_config(settings=[setting], options=options)


def test_relative_data_dir_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = resolve_config(options={"data.data_dir": "corpus"})
    assert config.data.data_dir == str(tmp_path / "corpus")
    assert resolve_config().data.data_dir == ""  # the bundled sample
    aligned = resolve_config(options={"data.data_dir": "corpus", "data.tgt_lang": "de,fr",
                                      "data.alignments": "de.align,fr.align"})
    assert aligned.data.alignments == f"{tmp_path / 'de.align'},{tmp_path / 'fr.align'}"
    # given again as they were given at first, relative: the run's own (it was refused)
    assert resume_config(aligned, {"data.alignments": "de.align,fr.align",
                                   "data.data_dir": "corpus"}) == aligned
    with pytest.raises(UserError, match="data.alignments is fixed by the run"):
        resume_config(aligned, {"data.alignments": "fr.align,de.align"})
    assert resolve_config(options={"data.data_dir": "my,corpus"}).data.data_dir == str(
        tmp_path / "my,corpus")  # one folder: only data.alignments lists several


def test_a_resumed_run_keeps_its_model_and_data():
    run = preset("transformer")
    resumed = resume_config(run, {"train.max_steps": "2000", "model.d_model": "128"})
    assert resumed.train.max_steps == 2000  # a limit may change; a setting given again unchanged
    with pytest.raises(UserError, match="model.d_model is fixed by the run"):
        resume_config(run, {"model.d_model": "64"})


def test_choice_lists_are_the_command_lines_choices():
    from nmt_cli.cli.common import Arch, Device, Precision

    assert tuple(c.value for c in Arch) == ARCHS
    assert tuple(c.value for c in Device) == DEVICES
    assert tuple(c.value for c in Precision) == PRECISIONS
    assert CHOICES["model.attention"] == ATTENTION_SCORES


def test_decode_config_checks_its_fields():
    with pytest.raises(UserError, match="--beam"):
        DecodeConfig(beam=0)
    with pytest.raises(UserError, match="--device"):
        DecodeConfig(device="tpu")
