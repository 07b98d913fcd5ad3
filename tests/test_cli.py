"""The command line as a user runs it: train, translate, eval, and bad input."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import sacrebleu
import safetensors.torch
import sentencepiece as spm
import torch
import typer.main
from typer.testing import CliRunner

import nmt_cli
from nmt_cli.cli import app
from nmt_cli.config import DecodeConfig, UserError
from nmt_cli.translate import Translator, load_engine

from conftest import read_sample, write_corpus

TINY_SETTINGS = ["--set", "model.d_model=32", "--set", "model.d_ff=64",
                 "--set", "model.num_encoder_layers=1", "--set", "model.num_decoder_layers=1",
                 "--set", "tokenizer.vocab_size=300", "--set", "train.validate_every=10"]


def nmt(*args: str, stdin: str | None = None, cwd: Path | None = None):
    """Run the real command in a subprocess."""
    return subprocess.run([sys.executable, "-m", "nmt_cli", *args], input=stdin, text=True,
                          capture_output=True, cwd=cwd, timeout=300)


def invoke(*args: str, input: bytes | None = None):
    """Run the command in-process (faster); errors must end in SystemExit, not a crash."""
    return CliRunner().invoke(app, list(args), input=input)


@pytest.fixture(scope="module")
def trained_run(small_corpus, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("runs") / "tiny"
    result = nmt("train", "--data", str(small_corpus), "--run", str(run), "--max-steps", "20",
                 "--batch-tokens", "1024", *TINY_SETTINGS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(run)
    return run


def test_run_directory_is_self_describing(trained_run):
    names = {p.name for p in trained_run.iterdir()}
    assert {"config.json", "spm.model", "model.safetensors", "last.safetensors",
            "train_state.pt", "metrics.jsonl"} <= names
    versions = json.loads((trained_run / "config.json").read_text())["versions"]
    assert versions == {"nmt": nmt_cli.__version__, "python": platform.python_version(),
                        "torch": torch.__version__,
                        "sentencepiece": spm.__version__, "sacrebleu": sacrebleu.__version__}


def test_a_resumed_run_keeps_the_versions_it_began_with(trained_run, tmp_path):
    run = shutil.copytree(trained_run, tmp_path / "run")
    described = json.loads((run / "config.json").read_text())
    began = {**described["versions"], "torch": "2.0.0"}
    (run / "config.json").write_text(json.dumps({**described, "versions": began}))
    assert invoke("train", "--resume", str(run), "--max-steps", "21").exit_code == 0
    described = json.loads((run / "config.json").read_text())
    assert described["versions"] == began
    assert described["resumed_with"] == {**began, "torch": torch.__version__}
    older = {key: value for key, value in began.items() if key != "nmt"}  # nmt's kept apart
    (run / "config.json").write_text(json.dumps({**described, "nmt_version": "0.0.9",
                                                 "versions": older}))
    assert invoke("train", "--resume", str(run), "--max-steps", "22").exit_code == 0
    assert json.loads((run / "config.json").read_text())["versions"] == {"nmt": "0.0.9",
                                                                        **older}
    records = [json.loads(line) for line in (trained_run / "metrics.jsonl").open()]
    assert [r["step"] for r in records if r["kind"] == "step"] == list(range(1, 21))
    assert [r["step"] for r in records if r["kind"] == "validate"] == [10, 20]


def test_translate_text_file_and_stdin(trained_run, tmp_path):
    result = nmt("translate", "--run", str(trained_run), "I love machine learning.")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1
    lines = ["A small test.", "", "The computer is new.", "Good morning!"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = invoke("translate", "--run", str(trained_run), "-i", str(tmp_path / "in.txt"),
                    "-o", str(tmp_path / "out.txt"), "--beam", "2")
    assert result.exit_code == 0, result.output
    from_file = (tmp_path / "out.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(from_file) == 4 and from_file[1] == ""
    result = CliRunner().invoke(app, ["translate", "--run", str(trained_run), "--beam", "2"],
                                input="\n".join(lines) + "\n")
    assert result.exit_code == 0
    assert result.stdout.split("\n")[:-1] == from_file
    text = "\n".join(lines) + "\n"  # as TEXT: the same lines; a form feed splits none
    as_text = invoke("translate", "--run", str(trained_run), "--beam", "2", text)
    assert as_text.exit_code == 0 and as_text.stdout.split("\n")[:-1] == from_file
    for odd in ("A man\x0cruns.", "A man\u2028runs.", ""):
        piped = CliRunner().invoke(app, ["translate", "--run", str(trained_run)], input=odd)
        given = invoke("translate", "--run", str(trained_run), odd)
        assert given.stdout == piped.stdout or odd == "", (odd, given.stdout, piped.stdout)
        assert len(given.stdout.split("\n")[:-1]) == 1


def test_int8_quantization_replaces_linear_layers_and_still_translates(trained_run):
    translator = Translator.from_run(trained_run, device="cpu", quantize="int8")
    quantized = [m for m in translator.run.model.modules()
                 if type(m).__module__.startswith("torch.ao.nn.quantized")]
    assert quantized and not any(type(m) is torch.nn.Linear
                                 for m in translator.run.model.modules())
    lines = ["A small test.", "The computer is new."]
    outputs = translator.translate(lines, DecodeConfig(beam=2, device="cpu"))
    assert len(outputs) == 2 and all(outputs)
    result = invoke("translate", "--run", str(trained_run), "--quantize", "int8", "Hello.")
    assert result.exit_code == 0 and result.stdout.strip()
    with pytest.raises(UserError, match="--quantize int8: its layers compute in float32"):
        load_engine("torch", trained_run, "cpu", "int8", "bf16")  # a server, before serving
    for precision in ("bf16", "fp16"):  # a traceback: the int8 layers take float32 only
        half = invoke("translate", "--run", str(trained_run), "--quantize", "int8",
                      "--precision", precision, "Hello.")
        assert half.exit_code == 1 and half.output.strip() == (
            f"error: --quantize int8: its layers compute in float32 (fp32); drop --precision "
            f"{precision}"), half.output


def test_eval_bleu_equals_the_sacrebleu_command(trained_run, small_corpus, tmp_path):
    hyp = tmp_path / "hyp.de"
    translated = invoke("translate", "--run", str(trained_run), "--beam", "3",
                        "-i", str(small_corpus / "test.en"), "-o", str(hyp))
    assert translated.exit_code == 0
    ref = str(small_corpus / "test.de")
    ours = json.loads(invoke("eval", "--run", str(trained_run), "--beam", "3", "--chrf",
                             "--json").stdout)
    scored = json.loads(invoke("evaluate", "--hyp", str(hyp), "--ref", ref, "--json").stdout)
    command = subprocess.run([Path(sys.executable).parent / "sacrebleu", ref, "-i", str(hyp),
                              "-m", "bleu", "chrf", "-w", "6"], capture_output=True, text=True)
    theirs = json.loads(command.stdout)
    assert ours["scores"][0]["score"] == pytest.approx(theirs[0]["score"], abs=1e-6)
    assert ours["scores"][1]["score"] == pytest.approx(theirs[1]["score"], abs=1e-6)
    assert scored["scores"][0]["score"] == pytest.approx(theirs[0]["score"], abs=1e-6)
    assert ours["scores"][0]["signature"] == theirs[0]["signature"]


def test_table_shows_signature(trained_run):
    result = invoke("eval", "--run", str(trained_run), "--beam", "1")
    assert result.exit_code == 0
    assert "BLEU" in result.stdout and "tok:13a" in result.stdout


def one_line_error(result, *needles: str) -> None:
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in message, message


def test_train_notes_the_settings_a_gru_does_not_read(tmp_path):
    missing = str(tmp_path / "none")  # the notes come before the corpus is read
    result = invoke("train", "--arch", "gru", "--data", missing, *TINY_SETTINGS)
    assert result.stderr.splitlines()[:3] == [
        "note: --set model.d_ff: a GRU does not read it (Transformer only)",
        "note: --set model.num_encoder_layers: a GRU does not read it (Transformer only)",
        "note: --set model.num_decoder_layers: a GRU does not read it (Transformer only)"]
    transformer = invoke("train", "--data", missing, *TINY_SETTINGS)
    assert "note:" not in transformer.stderr and missing in transformer.stderr
    assert result.stderr.splitlines()[3:] == transformer.stderr.splitlines()


def test_train_notes_a_target_language_that_is_the_source_language(tmp_path):
    missing = str(tmp_path / "none")
    same = invoke("train", "--data", missing, "--src-lang", "de", "--tgt-lang", "de")
    assert same.stderr.splitlines()[0] == ("note: data.src_lang and data.tgt_lang are both de: "
                                           "the model learns to copy its sources")
    for other in ("en", "de,en"):  # into English, or into German and English
        result = invoke("train", "--data", missing, "--src-lang", "de", "--tgt-lang", other)
        assert "note:" not in result.stderr and missing in result.stderr


def test_train_says_when_an_empty_data_dir_means_the_sample_corpus(tmp_path):
    """--set data.data_dir=$CORPUS with $CORPUS unset trained on the sample, saying nothing
    (stopped here by a language the sample lacks, once the corpus is named)."""
    result = invoke("train", "--set", "data.data_dir=", "--src-lang", "xx", "--run",
                    str(tmp_path / "run"))
    assert result.exit_code == 1
    assert " ".join(result.stderr.split()).startswith(
        "data.data_dir is empty (no --data): training on the sample corpus that comes with "
        "nmt (")


def test_bad_corpora(tmp_path):
    mismatched = write_corpus(tmp_path / "mismatch", {"train": (["a", "b"], ["x"]),
                                                      "val": (["a"], ["x"])})
    one_line_error(invoke("train", "--data", str(mismatched), "--run", str(tmp_path / "r1")),
                   "train.en has 2 lines", "train.de has 1")
    one_line_error(invoke("train", "--data", str(tmp_path / "missing")), "no such directory")
    bad = write_corpus(tmp_path / "bad", {"train": (["ok", "fine"], ["gut", "fein"]),
                                          "val": (["a"], ["x"])})
    (bad / "train.de").write_bytes(b"gut\nf\xc3\n")
    one_line_error(invoke("train", "--data", str(bad), "--run", str(tmp_path / "r2")),
                   "train.de:2: invalid UTF-8")
    empty = write_corpus(tmp_path / "empty", {"train": ([], []), "val": (["a"], ["x"])})
    one_line_error(invoke("train", "--data", str(empty), "--run", str(tmp_path / "r3")),
                   "train.en: file is empty")


def test_bad_options():
    one_line_error(invoke("train", "--set", "model.layers=2"), "unknown setting 'model.layers'",
                   "model.num_encoder_layers")
    one_line_error(invoke("train", "--set", "model.d_model"), "expected section.key=value")
    one_line_error(invoke("train", "--preset", "huge"), "unknown preset")


def test_broken_run_directories(trained_run, tmp_path):
    for missing in ("model.safetensors", "spm.model", "config.json"):
        broken = tmp_path / f"without-{missing}"
        shutil.copytree(trained_run, broken)
        (broken / missing).unlink()
        one_line_error(invoke("translate", "--run", str(broken), "hello"), str(broken))
    corrupt = tmp_path / "corrupt"
    shutil.copytree(trained_run, corrupt)
    (corrupt / "model.safetensors").write_bytes(b"\x00" * 100)
    one_line_error(invoke("translate", "--run", str(corrupt), "hello"), "model.safetensors")
    mismatched = tmp_path / "mismatched"
    shutil.copytree(trained_run, mismatched)
    config = json.loads((mismatched / "config.json").read_text())
    config["config"]["model"]["d_model"] = 64
    (mismatched / "config.json").write_text(json.dumps(config))
    one_line_error(invoke("translate", "--run", str(mismatched), "hello"),
                   "weights do not load into this model")
    one_line_error(invoke("translate", "--run", str(tmp_path / "nothing"), "hello"),
                   "no such run directory")


def test_real_entry_point_reports_errors_without_traceback(tmp_path):
    result = nmt("translate", "--run", str(tmp_path / "nowhere"), "hello")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'nowhere'}: no such run directory"]


def test_version():
    result = nmt("--version")
    assert result.returncode == 0 and result.stdout.startswith("nmt ")


HEAVY = ("torch", "numpy", "sentencepiece", "sacrebleu", "safetensors")


def loaded_after(code: str) -> dict:
    """Run `code`, which sets `result` (a dict), in a fresh interpreter: `result`, with the
    HEAVY modules left loaded under "loaded"."""
    code += (f"\nresult['loaded'] = [m for m in {HEAVY!r} if m in sys.modules]"
             "\nprint(json.dumps(result))")
    done = subprocess.run([sys.executable, "-c", "import json, sys\n" + code],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_help_version_and_option_errors_load_no_pytorch():
    """Every command's --help, --version and a mistyped option answer without importing
    PyTorch (it made `nmt --help` take 1.7 s instead of 0.2 s): the commands import it in
    their bodies."""
    found = loaded_after(textwrap.dedent("""
        import typer.main
        from typer.testing import CliRunner
        from nmt_cli.cli import app

        def names(group, prefix=()):
            for name, command in getattr(group, "commands", {}).items():
                yield (*prefix, name)
                yield from names(command, (*prefix, name))

        calls = [["--help"], ["--version"], ["train", "--no-such-option"],
                 *([*name, "--help"] for name in names(typer.main.get_command(app)))]
        result = {" ".join(args): CliRunner().invoke(app, args).exit_code for args in calls}
        """))
    loaded = found.pop("loaded")
    assert len(found) > 15 and found.pop("train --no-such-option") == 2
    assert set(found.values()) == {0}, found
    assert loaded == []


def test_the_library_loads_pytorch_when_a_name_needs_it():
    """`import nmt_cli` is light; Translator, train, evaluate... import their modules on first
    use. nmt_cli.evaluate is the function, nmt_cli.evaluation the module."""
    found = loaded_after(textwrap.dedent("""
        import nmt_cli
        result = {"at_import": "torch" in sys.modules}
        from nmt_cli import Translator, evaluate
        import nmt_cli.evaluation as module
        result["evaluate"] = evaluate is module.evaluate and nmt_cli.evaluate is evaluate
        result["translator"] = Translator.__name__
        try:
            nmt_cli.no_such_name
        except AttributeError as e:
            result["missing"] = str(e)
        """))
    assert found["at_import"] is False and "torch" in found["loaded"]
    assert found["evaluate"] is True and found["translator"] == "Translator"
    assert found["missing"] == "module 'nmt_cli' has no attribute 'no_such_name'"


def test_every_command_sums_itself_up_in_one_line():
    """`nmt --help` lists each command by the first paragraph of its help; a line break there
    breaks the listing mid-sentence."""
    def commands(group, prefix=""):
        for name, command in getattr(group, "commands", {}).items():
            yield prefix + name, command
            yield from commands(command, prefix + name + " ")

    found = dict(commands(typer.main.get_command(app)))
    assert {"train", "translate", "compare", "export", "serve", "data prepare"} <= set(found)
    for name, command in found.items():
        summary = (command.help or "").split("\n\n")[0]
        assert summary and "\n" not in summary, f"nmt {name}: {summary!r}"


def test_eval_rejects_contradictory_files(tmp_path):
    ref = tmp_path / "ref.de"
    ref.write_text("Hallo\n")
    one_line_error(invoke("eval", "--ref", str(ref)), "--ref needs --src")
    one_line_error(invoke("eval", "--src", str(ref), "--hyp", str(ref), "--ref", str(ref)),
                   "not both")


def test_bad_settings_are_one_line_errors(tmp_path):
    one_line_error(invoke("train", "--set", "model.num_heads=0"), "model.num_heads")
    one_line_error(invoke("train", "--set", "model.dropout=1.5"), "model.dropout")
    one_line_error(invoke("train", "--max-steps", "-5"), "train.max_steps")
    # values that torch would refuse with a traceback, or take and train on forever
    for setting, named in (("train.adam_beta2=1.5", "train.adam_beta2"),
                           ("train.adam_eps=-1", "train.adam_eps"),
                           ("train.adam_eps=0", "train.adam_eps must be positive"),
                           ("train.schedule=plateau,train.plateau_factor=2",
                            "train.plateau_factor"),
                           ("train.lr=inf", "train.lr must be a finite number"),
                           ("model.num_encoder_layers=0", "model.num_encoder_layers"),
                           ("model.tie_embeddings=5", "model.tie_embeddings"),
                           ("model.d_ff=4294967296", "model.d_ff must be at most"),
                           ("tokenizer.character_coverage=5", "character_coverage")):
        sets = [arg for one in setting.split(",") for arg in ("--set", one)]
        one_line_error(invoke("train", *sets), named)
    one_line_error(invoke("train", "--seed", str(2**64)), "train.seed must lie in")
    one_line_error(invoke("train", "--preset", ""), "unknown preset ''")
    for name, text, message in (
            ("nan.toml", "[train]\nmax_time = nan\n", "train.max_time must be a finite number"),
            ("table.toml", "[[model]]\nd_model = 64\n", "'model' is a section, not a setting"),
            # not read as 1.0, nor as the name "['en', 'fr']"
            ("true.toml", "[train]\nlr = true\n", "train.lr: expected float, got True"),
            ("list.toml", '[data]\nsrc_lang = ["en", "fr"]\n',
             "data.src_lang: expected str, got ['en', 'fr']")):
        (tmp_path / name).write_text(text)
        one_line_error(invoke("train", "--config", str(tmp_path / name)), f"{name}: {message}")
    (tmp_path / "latin1.toml").write_bytes(b"[model]\n# \xe9\nd_model = 64\n")
    one_line_error(invoke("train", "--config", str(tmp_path / "latin1.toml")),
                   "latin1.toml: invalid UTF-8 at byte 10")


def test_bad_decoding_options_and_text(trained_run, tmp_path):
    run = str(trained_run)
    for option, value in (("--beam", str(10**20)), ("--alpha", "1e308"), ("--alpha", "nan"),
                          ("--max-len-a", "inf"), ("--max-len-b", str(10**20))):
        one_line_error(invoke("translate", "--run", run, option, value, "hello"), option)
    one_line_error(invoke("translate", "--run", run, input=b"fine\n\xff\xfe\n"),
                   "stdin:2: invalid UTF-8 at byte 0")
    one_line_error(invoke("translate", "--run", run, "ab\udcff"), "TEXT: invalid UTF-8 at byte 2")
    one_line_error(invoke("attention", "--run", run, "\udcff", "-o", str(tmp_path / "a.png")),
                   "TEXT: invalid UTF-8 at byte 0")
    one_line_error(invoke("translate", "--run", run, "-o", str(tmp_path / "no" / "out.txt"),
                          "hello"), str(tmp_path / "no" / "out.txt"))
    if Path("/dev/full").exists():  # a write that fails names the file it went to
        one_line_error(invoke("translate", "--run", run, "-o", "/dev/full", "hello"),
                       "/dev/full: No space left on device")
    hyp = tmp_path / "hyp.de"
    hyp.write_text("Hallo\n")
    one_line_error(invoke("eval", "--hyp", str(hyp), "--ref", str(hyp), "--by-length", "-o",
                          str(tmp_path / "x.jpg")), "x.jpg: a picture's name ends in")
    one_line_error(invoke("eval", "--hyp", str(hyp), "--ref", str(hyp), "--run", run),
                   "--run has nothing to do")
    source = tmp_path / "src.en"
    source.write_text("hello\n")
    for saved in (source, hyp):  # it would replace what it read
        one_line_error(invoke("eval", "--run", run, "--src", str(source), "--ref", str(hyp),
                              "--save-hyp", str(saved)),
                       f"--save-hyp {saved}: it is also the input {saved}")
    assert (source.read_text(), hyp.read_text()) == ("hello\n", "Hallo\n")
    one_line_error(invoke("translate", "--run", run, "-i", str(source), "hi"),
                   f"TEXT and -i {source}: give one or the other")
    one_line_error(invoke("translate", "--run", run, "-i", "-", "hi", input="hello\n"),
                   "TEXT and -i -: give one or the other")  # stdin was left unread


def test_options_that_would_change_nothing_are_refused(trained_run):
    """Sampling's settings without --sampling, and a glossary's without a glossary, were
    taken and ignored, and eval's line of how it decoded listed them as if used."""
    run = str(trained_run)
    for option in (["--temperature", "5"], ["--sampling-topk", "3"], ["--sampling-topp", "0.5"],
                   ["--sampling-seed", "7"]):
        for command in (["translate", "Hello."], ["eval"]):
            one_line_error(invoke(*command, "--run", run, *option),
                           f"{option[0]}: a setting of --sampling, which is off")
    one_line_error(invoke("translate", "--run", run, "--glossary-ignore-case", "Hello."),
                   "--glossary-ignore-case: no glossary to find terms of; give --glossary")
    one_line_error(invoke("eval", "--run", run, "--glossary-inflect"),
                   "--glossary-inflect: no terms to inflect")
    assert invoke("translate", "--run", run, "--sampling", "--temperature", "5",
                  "Hello.").exit_code == 0
    sampled = invoke("eval", "--run", run, "--sampling", "--batch-size", "4")
    assert sampled.exit_code == 0 and "sampling True" in sampled.stdout
    assert "batch_size 4" in sampled.stdout  # draws follow the batches: named to make again


def test_no_file_read_is_written_over_and_a_failed_translation_keeps_the_old_output(
        trained_run, small_corpus, tmp_path):
    """-o naming the glossary, or --save-hyp the test split eval reads without --src/--ref,
    are refused; a malformed glossary fails before -o's old contents are emptied. "-" names
    stdin and stdout, and an empty input file gives an empty output, as stdin does."""
    run = str(trained_run)
    glossary = tmp_path / "terms.tsv"
    glossary.write_text("dog\tHund\n")
    one_line_error(invoke("translate", "--run", run, "--glossary", str(glossary), "-o",
                          str(glossary), "a dog"),
                   f"-o {glossary}: it is also the input {glossary}")
    reference = small_corpus / "test.de"
    before = reference.read_bytes()
    one_line_error(invoke("eval", "--run", run, "--beam", "1", "--save-hyp", str(reference)),
                   f"--save-hyp {reference}: it is also the input {reference}")
    assert reference.read_bytes() == before
    bad, old = tmp_path / "bad.tsv", tmp_path / "old.de"
    bad.write_text("no tab here\n")
    old.write_text("Was hier stand.\n")
    one_line_error(invoke("translate", "--run", run, "--glossary", str(bad), "-o", str(old),
                          "a dog"), f"{bad}:1: expected a source term")
    assert old.read_text() == "Was hier stand.\n"
    assert invoke("translate", "--run", run, "--beam", "1", "-o", str(old), "a dog"
                  ).exit_code == 0
    assert len(old.read_text().splitlines()) == 1 and old.read_text() != "Was hier stand.\n"
    empty = tmp_path / "empty.en"
    empty.write_bytes(b"")
    assert invoke("translate", "--run", run, "--beam", "1", "-i", "-", "-o", "-",
                  input=b"a dog\n").stdout.count("\n") == 1  # "-": stdin and stdout
    assert not Path("-").exists()
    for given in (["-i", str(empty)], []):  # nothing in, nothing out, as from stdin
        old.write_text("Was hier stand.\n")
        assert invoke("translate", "--run", run, "-o", str(old), *given, input=b"").exit_code == 0
        assert old.read_text() == ""


def test_broken_run_configs_are_named(trained_run, tmp_path):
    changes = {"not-an-object": (lambda d: d.update(config="hello"), "a \"config\" object"),
               "no-vocab": (lambda d: d.update(vocab=None), "\"vocab\" must hold"),
               "nan": (lambda d: d["config"]["model"].update(dropout="nan"),
                       "model.dropout must be a finite number"),
               "huge": (lambda d: d["config"]["model"].update(d_ff=2**30),
                        "not enough memory for d_model")}
    for name, (change, message) in changes.items():
        one_line_error(invoke("translate", "--run", str(changed_run(trained_run, tmp_path / name,
                                                                        change)), "hello"),
                       message)


def test_settings_that_runs_were_made_with_before_the_checks_still_load(trained_run, tmp_path):
    def older(description):  # a negative seed and a step limit past 2^31 trained fine
        description["config"]["train"].update(seed=-1, max_steps=10**10)
    run = changed_run(trained_run, tmp_path / "older", older)
    result = invoke("translate", "--run", str(run), "hello")
    assert result.exit_code == 0, result.output


def changed_run(run: Path, copy: Path, change) -> Path:
    shutil.copytree(run, copy)
    description = json.loads((copy / "config.json").read_text())
    change(description)
    (copy / "config.json").write_text(json.dumps(description))
    return copy


def test_the_largest_seed_trains(small_corpus, tmp_path):
    result = invoke("train", "--data", str(small_corpus), "--run", str(tmp_path / "run"),
                    "--seed", str(2**64 - 1), "--max-steps", "1", "--batch-tokens", "1024",
                    *TINY_SETTINGS)
    assert result.exit_code == 0, result.output


def test_a_failed_run_leaves_no_directory(tmp_path):
    empty = write_corpus(tmp_path / "empty", {"train": (["", ""], ["", ""]),
                                              "val": (["a"], ["x"])})
    run = tmp_path / "run"
    one_line_error(invoke("train", "--data", str(empty), "--run", str(run)),
                   "no usable training pairs")
    assert not run.exists()


def metrics(run: Path, kind: str) -> list[dict]:
    records = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    return [r for r in records if r["kind"] == kind]


def test_finetuning_starts_from_the_parent_and_resumes_without_it(trained_run, tmp_path):
    parent, child = tmp_path / "parent", tmp_path / "child"
    shutil.copytree(trained_run, parent)
    # new training pairs, on which a tokenizer of their own would differ; the same validation
    corpus = write_corpus(tmp_path / "corpus", {
        "train": (read_sample("train", "en")[-500:], read_sample("train", "de")[-500:]),
        "val": (read_sample("val", "en", 60), read_sample("val", "de", 60))})
    # the default preset's model is far larger: the parent's settings replace it
    result = invoke("train", "--data", str(corpus), "--run", str(child), "--finetune",
                    str(parent), "--max-steps", "6", "--batch-tokens", "1024",
                    "--set", "train.validate_every=3", "--set", "model.dropout=0.3")
    assert result.exit_code == 0, result.output
    assert "fine-tuning" in result.stderr and "model.d_model=32" in result.stderr
    mine, theirs = (json.loads((run / "config.json").read_text())["config"]
                    for run in (child, parent))
    assert {**mine["model"], "dropout": 0.0} == {**theirs["model"], "dropout": 0.0}
    assert mine["model"]["dropout"] == 0.3 and mine["tokenizer"] == theirs["tokenizer"]
    assert mine["train"]["finetune_from"] == str(parent.resolve())
    assert (child / "spm.model").read_bytes() == (parent / "spm.model").read_bytes()
    # step 0 scores the parent's best weights on the same validation set, as it did itself
    start = metrics(child, "validate")[0]
    best = [r for r in metrics(parent, "validate") if r["best"]][-1]
    assert start["step"] == 0 and start["val_bleu"] == best["val_bleu"]
    assert start["val_loss"] == pytest.approx(best["val_loss"], rel=1e-5)
    assert (child / "last.safetensors").read_bytes() != (parent / "model.safetensors").read_bytes()
    shutil.rmtree(parent)  # a resumed run has all it needs in its own directory
    result = invoke("train", "--resume", str(child), "--max-steps", "9")
    assert result.exit_code == 0, result.output
    assert [r["step"] for r in metrics(child, "validate")] == [0, 3, 6, 9]


def test_dump_config_prints_the_settings_a_run_would_take(trained_run, small_corpus, tmp_path):
    """As TOML that --config reads back to the same settings; nothing is trained."""
    from nmt_cli.checkpoint import read_config
    from nmt_cli.config import resolve_config, to_dict, tomllib  # tomli before Python 3.11

    run = tmp_path / "run"
    args = ["--preset", "multi30k-transformer", "--data", str(small_corpus), "--set",
            "model.dropout=0.25", "--set", "data.src_lang=e\"n", "--max-steps", "9"]
    result = invoke("train", *args, "--run", str(run), "--dump-config")
    assert result.exit_code == 0, result.output
    assert not run.exists()
    dumped = tmp_path / "dumped.toml"
    dumped.write_text(result.stdout, encoding="utf-8")
    expected = resolve_config("multi30k-transformer", settings=["model.dropout=0.25",
                                                                'data.src_lang=e"n'],
                              options={"data.data_dir": str(small_corpus), "train.max_steps": 9})
    assert tomllib.loads(result.stdout) == to_dict(expected)
    assert resolve_config(config_file=dumped) == expected
    # a resumed run: its own settings with the changes given; a fine-tuned one: its parent's
    resumed = tomllib.loads(invoke("train", "--resume", str(trained_run), "--max-steps", "99",
                                   "--dump-config").stdout)
    assert resumed == {**to_dict(read_config(trained_run)[0]),
                       "train": {**to_dict(read_config(trained_run)[0])["train"],
                                 "max_steps": 99, "max_time": 0.0, "epochs": 0}}
    child = tomllib.loads(invoke("train", "--finetune", str(trained_run), "--data",
                                 str(small_corpus), "--dump-config").stdout)
    assert child["model"]["d_model"] == read_config(trained_run)[0].model.d_model == 32
    assert child["train"]["finetune_from"] == str(trained_run.resolve())


def test_finetuning_needs_a_trained_run_and_its_tokenizer(trained_run, small_corpus,
                                                              tmp_path):
    data = ["--data", str(small_corpus)]
    one_line_error(invoke("train", *data, "--finetune", str(tmp_path / "nothing")),
                   "--finetune", "not a trained run directory")
    one_line_error(invoke("train", *data, "--finetune", str(trained_run),
                          "--set", f"model.src_embeddings={tmp_path / 'vectors.txt'}"),
                   "leave model.src_embeddings")
    one_line_error(invoke("train", "--resume", str(trained_run), "--finetune", str(trained_run)),
                   "--finetune apply to new runs only")
    # a Transformer parent trained on with the GRU preset's settings, silently, before
    one_line_error(invoke("train", *data, "--finetune", str(trained_run), "--arch", "gru"),
                   f"--arch gru: --finetune {trained_run} is a transformer run")
    one_line_error(invoke("train", *data, "--set", f"train.finetune_from={trained_run}",
                          "--set", "model.arch=gru"),  # was silently a Transformer
                   f"model.arch gru: --finetune {trained_run} is a transformer run")
    (tmp_path / "five.toml").write_text("[train]\nfinetune_from = 5\n")  # not a traceback
    one_line_error(invoke("train", *data, "--config", str(tmp_path / "five.toml")),
                   "train.finetune_from: expected str, got 5")
    short = tmp_path / "short"  # a parent that reads at most 64 tokens
    assert invoke("train", *data, "--run", str(short), "--max-steps", "1", "--batch-tokens",
                  "1024", *TINY_SETTINGS, "--set", "model.max_positions=64", "--set",
                  "data.max_len=60").exit_code == 0
    one_line_error(invoke("train", *data, "--finetune", str(short)),
                   f"--finetune {short}: its model reads at most 64 tokens (model.max_positions),"
                   " fewer than data.max_len 100; give --set data.max_len=64")
    one_line_error(invoke("train", *data, "--finetune", str(short), "--set",  # over the preset's
                          "data.max_len=5000"), f"--finetune {short}: its model reads at most 64")
    one_line_error(invoke("train", *data, "--set", "data.max_len=5000"),
                   "data.max_len 5000 must not exceed model.max_positions 1024")
    prepared = tmp_path / "prepared"  # ids of a tokenizer other than the parent's
    result = invoke("data", "prepare", *data, "--out", str(prepared),
                    "--set", "tokenizer.vocab_size=250")
    assert result.exit_code == 0, result.output
    run = tmp_path / "run"
    one_line_error(invoke("train", "--data", str(prepared), "--run", str(run), "--finetune",
                          str(trained_run)), "prepared with another tokenizer",
                   f"nmt data prepare --tokenizer {trained_run}")
    assert not run.exists()
    again = ["data", "prepare", *data, "--out", str(prepared), "--tokenizer", str(trained_run)]
    one_line_error(invoke(*again), f"--out {prepared}: holds a prepared corpus already; add "
                                   "--force")
    one_line_error(invoke(*again, "--force", "--set", "tokenizer.vocab_size=250"),
                   f"--set tokenizer.vocab_size=250: --tokenizer {trained_run} brings its own "
                   "tokenizer")
    result = invoke(*again, "--force")  # ... and with the parent's
    assert result.exit_code == 0, result.output
    result = invoke("train", "--data", str(prepared), "--run", str(run), "--finetune",
                    str(trained_run), "--max-steps", "1", "--batch-tokens", "1024")
    assert result.exit_code == 0, result.output
    # prepared longer than the parent reads (its --set data.max_len is the corpus's): this
    # trained to a traceback at the first step, and --dump-config printed it
    longer = tmp_path / "longer"
    assert invoke("data", "prepare", *data, "--out", str(longer), "--tokenizer",
                  str(short)).exit_code == 0
    for dump in ([], ["--dump-config"]):
        result = invoke("train", "--data", str(longer), "--run", str(tmp_path / "long"),
                        "--finetune", str(short), "--set", "data.max_len=64", *dump)
        assert result.exit_code == 1 and "Traceback" not in result.output  # after its notes:
        assert " ".join(result.stderr.split()).endswith(
            f"error: {longer}: prepared with data.max_len 100, longer than the model reads "
            "(model.max_positions 64); prepare it again with --set data.max_len=64")
    assert not (tmp_path / "long").exists()
    assert (run / "spm.model").read_bytes() == (trained_run / "spm.model").read_bytes()


def test_a_reader_that_stops_reading_ends_translation_quietly(trained_run, tmp_path):
    (tmp_path / "many.en").write_text("A man runs.\n" * 3000, encoding="utf-8")
    command = [sys.executable, "-m", "nmt_cli", "translate", "--run", str(trained_run), "-i",
               str(tmp_path / "many.en"), "--beam", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout.readline()  # like `| head -1`
    process.stdout.close()
    assert process.wait(timeout=300) == 141  # 128 + SIGPIPE, as Unix tools end
    assert process.stderr.read() == b""


def test_an_ensemble_needs_runs_of_one_tokenizer(trained_run, small_corpus, tmp_path):
    twin = tmp_path / "twin"  # the same tokenizer, other weights
    shutil.copytree(trained_run, twin)
    weights = safetensors.torch.load_file(twin / "model.safetensors")
    safetensors.torch.save_file({k: v * 0.5 for k, v in weights.items()},
                                twin / "model.safetensors")
    lines, tsv = b"A man runs.\nTwo dogs.\n", ["--format", "tsv", "--beam", "3"]
    alone = invoke("translate", "--run", str(trained_run), *tsv, input=lines)
    both = invoke("translate", "--run", str(trained_run), "--ensemble", str(twin), *tsv,
                  input=lines)
    assert alone.exit_code == both.exit_code == 0, both.output
    assert len(both.stdout.splitlines()) == 2
    log_probs = [[row.split("\t")[3] for row in r.stdout.splitlines()] for r in (alone, both)]
    assert log_probs[0] != log_probs[1]
    result = invoke("eval", "--run", str(trained_run), "--ensemble", str(twin), "--json")
    assert result.exit_code == 0, result.output
    scored = json.loads(result.stdout)
    assert scored["hypotheses"].startswith(f"{trained_run} + {twin} on ")
    assert scored["source"] == scored["hypotheses"]  # its former name
    (tmp_path / "src.en").write_bytes(lines)
    (tmp_path / "tgt.de").write_text("Ein Mann läuft.\nZwei Hunde.\n", encoding="utf-8")
    score = ["score", "--run", str(trained_run), "--src", str(tmp_path / "src.en"), "--tgt",
             str(tmp_path / "tgt.de")]
    scores = [invoke(*score, *more) for more in ([], ["--ensemble", str(twin)])]
    assert scores[0].exit_code == scores[1].exit_code == 0, scores[1].output
    assert len(scores[1].stdout.splitlines()) == 2 and scores[0].stdout != scores[1].stdout
    other = tmp_path / "other"  # a tokenizer of its own
    result = invoke("train", "--data", str(small_corpus), "--run", str(other), "--max-steps", "1",
                    *TINY_SETTINGS, "--set", "tokenizer.vocab_size=250")
    assert result.exit_code == 0, result.output
    one_line_error(invoke("translate", "--run", str(trained_run), "--ensemble", str(other),
                          "hello"), f"--ensemble {other}: its tokenizer is not")
    one_line_error(invoke("translate", "--run", str(trained_run), "--ensemble", str(twin),
                          "--engine", "ctranslate2", "hello"), "--ensemble: the ctranslate2")
    one_line_error(invoke("translate", "--run", str(trained_run), "--ensemble", str(twin),
                          "--format", "jsonl", "--attention", "hello"), "--attention: each model")
