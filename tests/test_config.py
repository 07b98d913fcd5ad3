"""Configuration: presets, TOML and --set overrides checked against the dataclass fields."""

import pytest

from nmt_cli.config import (
    PRESETS,
    Config,
    UserError,
    apply_overrides,
    from_dict,
    load_toml,
    parse_duration,
    parse_set,
    preset,
    to_dict,
)


def test_overrides_are_typed():
    config = apply_overrides(Config(), parse_set(["model.d_model=64", "model.norm_first=false",
                                                  "train.lr=0.002", "train.max_time=20m"]))
    assert config.model.d_model == 64 and config.model.norm_first is False
    assert config.train.lr == 0.002 and config.train.max_time == 1200.0


def test_unknown_key_lists_the_valid_ones():
    with pytest.raises(UserError, match=r"unknown setting 'model.layers'.*model\.d_model"):
        apply_overrides(Config(), {"model.layers": "3"})


@pytest.mark.parametrize(("key", "value"), [("model.d_model", "big"), ("model.arch", "lstm"),
                                            ("model.norm_first", "maybe"),
                                            ("train.device", "tpu")])
def test_bad_values_are_errors(key, value):
    with pytest.raises(UserError, match=key.split(".")[1]):
        apply_overrides(Config(), {key: value})


def test_toml_file(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text('[model]\narch = "gru"\nattention = "dot"\n[train]\nmax_steps = 10\n')
    config = apply_overrides(Config(), load_toml(path))
    assert (config.model.arch, config.model.attention, config.train.max_steps) == ("gru", "dot", 10)
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


def test_durations():
    assert parse_duration("90") == 90 and parse_duration("1h30m") == 5400
    with pytest.raises(UserError, match="invalid duration"):
        parse_duration("soon")
