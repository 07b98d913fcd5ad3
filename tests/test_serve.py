"""`nmt serve` as clients meet it: a real server process on a free loopback port, spoken to
over HTTP; and the batching worker behind it, on its own."""

from __future__ import annotations

import asyncio
import http.client
import json
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
import safetensors.torch
from typer.testing import CliRunner

import nmt_cli
from nmt_cli import DecodeConfig, Translator, resolve_config
from nmt_cli.batching import Batcher, Busy
from nmt_cli.cli import app
from nmt_cli.errors import UserError
from nmt_cli.markup import parse
from nmt_cli.training import Trainer, prepare_run_dir
from nmt_cli.translate import Translation

from conftest import read_sample

SHORT = {"max_len_a": 0.0, "max_len_b": 12}  # the module server's outputs: at most 12 tokens
SHORT_OPTIONS = ["--max-len-a", "0", "--max-len-b", "12"]


@pytest.fixture(scope="module")
def run_dir(small_corpus, tmp_path_factory) -> Path:
    """A 4-step tiny Transformer; its log gets two validations with BLEU above 0 (a model
    this small scores 0), the first of them marked best, so that /info's BLEU of the best
    weights can be told from the others and from the highest."""
    config = resolve_config("transformer", settings=[
        "model.d_model=32", "model.d_ff=64", "model.num_encoder_layers=1",
        "model.num_decoder_layers=1", "tokenizer.vocab_size=300", "train.validate_every=2",
        "train.max_steps=4"], options={"data.data_dir": str(small_corpus)})
    run = Trainer(config, prepare_run_dir(tmp_path_factory.mktemp("serve") / "run"),
                  lambda event: None).run()
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as log:
        for step, bleu, best in ((6, 12.25, True), (8, 13.5, False)):
            log.write(json.dumps({"kind": "validate", "step": step, "val_loss": 5.0,
                                  "val_bleu": bleu, "best": best}) + "\n")
    return run


@pytest.fixture(scope="module")
def translator(run_dir) -> Translator:
    return Translator.from_run(run_dir, "cpu")


class Server:
    """`nmt serve RUN --port 0` in a process of its own; `url` once it listens."""

    def __init__(self, run_dir: Path, *options: str):
        pytest.importorskip("fastapi")
        pytest.importorskip("uvicorn")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nmt_cli", "serve", str(run_dir), "--port", "0",
             "--device", "cpu", *options],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.stderr: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self.read_stderr, daemon=True).start()
        self.url = self.wait_for_url()

    def read_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr.put(line)
        self.stderr.put(None)

    def wait_for_url(self) -> str:
        """The address the server prints once it listens (its socket is open from then on,
        so the first request waits for it rather than failing)."""
        seen = []
        while (line := self.stderr.get(timeout=120)) is not None:
            seen.append(line)
            if found := re.search(r" on (http://\S+) ", line):
                return found.group(1)
        raise AssertionError(f"the server exited with {self.process.wait()}: {''.join(seen)}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


def call(url: str, body: bytes | dict | None = None,
         method: str | None = None) -> tuple[int, str, dict]:
    """(status, content type, JSON answer) of one request on a connection of its own."""
    data = body if isinstance(body, bytes | None) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, answer.headers["Content-Type"], json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], json.loads(e.read())


@pytest.fixture(scope="module")
def server(run_dir):
    server = Server(run_dir, *SHORT_OPTIONS)
    yield server
    assert server.stop() == 0


GERMAN = read_sample("test", "de", 200)


def request_of(i: int, lines: list[str]) -> dict:
    """Request i of the load: greedy, the server's default beam (5), n-best lists, another
    beam; every fifth holds three lines; every seventh gives target prefixes (the first two
    words of the reference; a list of one per line where it has three); every eleventh asks
    for word alignments; every thirteenth has inline markup (its lines' second words in
    bold, a <br/> after them); every seventeenth a name the vocabulary cannot spell, to
    copy."""
    text = lines[i] if i % 5 else [lines[i], lines[(i + 1) % len(lines)], ""]
    if i % 17 == 9:  # a name of characters the vocabulary lacks
        text = f"Ольга {text}" if isinstance(text, str) else [f"Ольга {line}" for line in text]
    if i % 13 == 6:
        bold = [re.sub(r"^(\S+ )(\S+)", r"\1<b>\2</b>", line) + "<br/>" for line in
                ([text] if isinstance(text, str) else text)]
        text = bold[0] if isinstance(text, str) else bold
    settings = [{}, {"beam": 1}, {"nbest": 3}, {"beam": 2, "nbest": 2}][i % 4]
    if i % 7 == 3:
        start = " ".join(GERMAN[i].split()[:2])
        settings["prefix"] = start if i % 5 else [start, "", "Ein"]
    if i % 11 == 4:
        settings["alignment"] = True
    if i % 13 == 6:
        settings["markup"] = True
    if i % 17 == 9:
        settings["copy_unknown"] = True
    return {"text": text, **settings}


def lines_of(request: dict) -> list[str]:
    return [request["text"]] if isinstance(request["text"], str) else request["text"]


def texts_of(request: dict) -> list[str]:
    """The text of each line, taken out of its markup when it has some."""
    return [parse(line).text if request.get("markup") else line for line in lines_of(request)]


def prefixes_of(request: dict) -> list[str]:
    prefix = request.get("prefix", "")
    return [prefix] * len(lines_of(request)) if isinstance(prefix, str) else prefix


def expected(translator: Translator, requests: list[dict]) -> list[list[list[Translation]]]:
    """The Translator's n-best lists for each request's lines, with its settings (decoded a
    group of requests with the same settings at a time: batching does not change them)."""
    answers: list = [None] * len(requests)
    for settings in {(r.get("beam", 5), r.get("nbest", 1)) for r in requests}:
        group = [i for i, r in enumerate(requests) if (r.get("beam", 5), r.get("nbest", 1))
                 == settings]
        found = iter(translator.translate_nbest(
            [line for i in group for line in texts_of(requests[i])],
            DecodeConfig(beam=settings[0], **SHORT), settings[1],
            prefixes=[prefix for i in group for prefix in prefixes_of(requests[i])],
            alignment=True))
        for i in group:
            answers[i] = [next(found) for _ in lines_of(requests[i])]
            marked = ([parse(line) for line in lines_of(requests[i])]
                      if requests[i].get("markup") else None)
            answers[i] = translator.finish(texts_of(requests[i]), answers[i], True, marked,
                                           requests[i].get("copy_unknown", False),
                                           prefixes_of(requests[i]))
    return answers


def test_concurrent_requests_get_the_translators_own_answers(server, translator):
    lines = read_sample("test", "en", 200)
    requests = [request_of(i, lines) for i in range(200)]
    with ThreadPoolExecutor(20) as clients:  # 20 clients, each sending its next at once
        answers = list(clients.map(lambda r: call(server.url + "/translate", r), requests))
    for request, (status, _, answer), wanted in zip(requests, answers,
                                                    expected(translator, requests)):
        assert status == 200, answer
        assert [t["text"] for t in answer["translations"]] == [h[0].text for h in wanted]
        for line, text, prefix in zip(answer["translations"], texts_of(request),
                                      prefixes_of(request)):
            plain = parse(line["text"]).text if request.get("markup") else line["text"]
            assert plain.startswith(prefix) or not text  # a blank line stays blank
        for line, hypotheses in zip(answer["translations"], wanted):
            assert line["score"] == pytest.approx(hypotheses[0].score, rel=1e-4, abs=1e-4)
            if request.get("nbest", 1) > 1:
                assert [h["text"] for h in line["nbest"]] == [h.text for h in hypotheses]
            else:
                assert "nbest" not in line
            for h, hypothesis in zip(line.get("nbest", [line]), hypotheses):
                if request.get("alignment"):
                    assert h["alignment"] == [list(link) for link in hypothesis.alignment]
                else:
                    assert "alignment" not in h
    health = call(server.url + "/health")[2]
    assert health["received"] == health["answered"] >= 200
    assert health["batches"] < 200  # concurrent requests were decoded together


MEGABYTE_LINE = "word " * 200_000
BAD_REQUESTS = {  # name: (method, path, body, status)
    "malformed JSON": ("POST", "/translate", b'{"text": "Hello.', 400),
    "not UTF-8": ("POST", "/translate", b'{"text": "\xff\xfe"}', 400),
    "nested 100,000 deep": ("POST", "/translate", b"[" * 100_000, 400),
    "not an object": ("POST", "/translate", ["Hello."], 422),
    "no text": ("POST", "/translate", {}, 422),
    "text a number": ("POST", "/translate", {"text": 5}, 422),
    "text null": ("POST", "/translate", {"text": None}, 422),
    "a line not a string": ("POST", "/translate", {"text": ["Hello.", 3]}, 422),
    "nested lists": ("POST", "/translate", {"text": [["Hello."]]}, 422),
    "empty list": ("POST", "/translate", {"text": []}, 422),
    "beam a string": ("POST", "/translate", {"text": "Hi.", "beam": "5"}, 422),
    "beam a float": ("POST", "/translate", {"text": "Hi.", "beam": 2.0}, 422),
    "beam true": ("POST", "/translate", {"text": "Hi.", "beam": True}, 422),
    "beam 0": ("POST", "/translate", {"text": "Hi.", "beam": 0}, 422),
    "beam too wide": ("POST", "/translate", {"text": "Hi.", "beam": 10_000}, 422),
    "nbest over beam": ("POST", "/translate", {"text": "Hi.", "beam": 2, "nbest": 3}, 422),
    "unknown field": ("POST", "/translate", {"text": "Hi.", "model": "/etc/passwd"}, 422),
    "lone surrogate": ("POST", "/translate", b'{"text": "a\\ud800b"}', 422),
    "prefix a number": ("POST", "/translate", {"text": "Hi.", "prefix": 5}, 422),
    "a prefix per line, one short": ("POST", "/translate", {"text": ["A.", "B."],
                                                             "prefix": ["Ein"]}, 422),
    "a prefix not a string": ("POST", "/translate", {"text": ["A."], "prefix": [None]}, 422),
    "a 1 MB prefix": ("POST", "/translate", {"text": "Hi.", "prefix": MEGABYTE_LINE}, 413),
    "prefix lone surrogate": ("POST", "/translate", b'{"text": "a", "prefix": "\\ud800"}', 422),
    "alignment a string": ("POST", "/translate", {"text": "Hi.", "alignment": "yes"}, 422),
    "markup a string": ("POST", "/translate", {"text": "Hi.", "markup": "yes"}, 422),
    "split_sentences a string": ("POST", "/translate", {"text": "Hi.", "split_sentences": "yes"},
                                 422),
    "split_sentences with nbest": ("POST", "/translate", {"text": "Hi. Bye.", "nbest": 2,
                                                          "split_sentences": True}, 422),
    "markup that does not nest": ("POST", "/translate",
                                  {"text": ["Hi.", "<b>Hi."], "markup": True}, 422),
    "10,000 lines": ("POST", "/translate", {"text": ["Hello."] * 10_000}, 413),
    "a 1 MB line": ("POST", "/translate", {"text": MEGABYTE_LINE}, 413),
    "GET /translate": ("GET", "/translate", None, 405),
    "DELETE /health": ("DELETE", "/health", None, 405),
    "POST /info": ("POST", "/info", {"text": "Hi."}, 405),
    "tgt_lang of 1 MB": ("POST", "/translate", {"text": "Hi.", "tgt_lang": MEGABYTE_LINE}, 422),
    "an unknown field of 1 MB": ("POST", "/translate", {"text": "Hi.", MEGABYTE_LINE: 1}, 422),
    "a glossary term with a tab": ("POST", "/translate", {"text": "A bike.",
                                                          "glossary": {"bike": "Fahr\trad"}},
                                   422),
    "a prefix the vocabulary cannot spell": ("POST", "/translate", {"text": "Hi.",
                                                                    "prefix": "中文"}, 422),
    "a line of more tokens than the model reads": ("POST", "/translate", {"text": "a. " * 666},
                                                   413),
    "a prefix of more tokens than a translation holds": ("POST", "/translate", {
        "text": "Hi.", "prefix": "a. " * 666}, 413),
    "glossary terms of more tokens than --max-term-tokens": ("POST", "/translate", {
        "text": "A dog.", "glossary": {"dog": "Hund " * 40}}, 413),
    "no such path": ("GET", "/translate/../../etc/passwd", None, 404),
    "a trailing slash": ("POST", "/translate/", {"text": "Hi."}, 404),
    "another path": ("POST", "/v1/translate", {"text": "Hi."}, 404),
}


@pytest.mark.parametrize("name", BAD_REQUESTS)
def test_bad_requests_get_a_json_error_and_the_server_serves_on(server, name):
    method, path, body, wanted = BAD_REQUESTS[name]
    status, content_type, answer = call(server.url + path, body, method)
    assert (status, content_type) == (wanted, "application/json"), answer
    assert isinstance(answer["error"], str) and "\n" not in answer["error"]
    assert len(answer["error"]) < 400  # what it quotes of the request is cut short
    assert call(server.url + "/health")[:2] == (200, "application/json")
    assert call(server.url + "/translate", {"text": "Hello."})[0] == 200


def test_a_prefix_or_term_the_model_cannot_spell_is_refused_before_decoding(server):
    """Found only in decoding, it failed its batch, and every request in it was then decoded
    again on its own."""
    before = call(server.url + "/health")[2]["batches"]
    for body, name in (({"text": "Hi.", "prefix": "中文"}, "prefix"),
                       ({"text": "A dog.", "glossary": {"dog": "中文"}}, "term")):
        status, _, answer = call(server.url + "/translate", body)
        assert status == 422, answer
        assert answer["error"] == (f"the target {name} '中文' has a character the model's "
                                   "vocabulary lacks, so it cannot be written")
    assert call(server.url + "/health")[2]["batches"] == before


def test_a_body_over_the_limit_is_refused_before_it_is_read(server):
    """A client that says it will send 100 MB is answered 413 after its first bytes."""
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    connection.putrequest("POST", "/translate")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(100_000_000))
    connection.endheaders(b'{"text": "')
    answer = connection.getresponse()
    assert answer.status == 413 and "bytes" in json.loads(answer.read())["error"]
    connection.close()
    assert call(server.url + "/health")[0] == 200


def test_info_describes_the_run_and_names_no_path(server, run_dir, translator):
    status, _, info = call(server.url + "/info")
    parameters = sum(p.numel() for p in translator.run.model.parameters())
    assert status == 200
    assert info["run"] == run_dir.name and "/" not in json.dumps(info)
    assert (info["source_language"], info["target_language"]) == ("en", "de")
    assert (info["architecture"], info["parameters"]) == ("transformer", parameters)
    assert info["best_val_bleu"] == 12.25 and info["best_metric"] == "bleu"
    assert info["defaults"]["beam"] == 5 and info["limits"]["lines"] == 100
    assert info["glossary_terms"] == 0 and info["limits"]["glossary_terms"] == 1000
    assert info["limits"]["tokens_per_line"] == translator.run.model.max_positions - 1
    assert info["limits"]["term_tokens_per_line"] == 32
    assert info["limits"]["queued_lines"] == 1000
    for path in ("/health", "/info"):  # as a monitor may ask
        request = urllib.request.Request(server.url + path, method="HEAD")
        with urllib.request.urlopen(request, timeout=60) as answer:
            assert answer.status == 200 and answer.read() == b""


def test_an_ensemble_serves_the_mean_of_its_models(run_dir, translator, tmp_path):
    twin = tmp_path / "twin"  # the run's tokenizer, its weights halved
    shutil.copytree(run_dir, twin)
    weights = safetensors.torch.load_file(twin / "model.safetensors")
    safetensors.torch.save_file({k: v * 0.5 for k, v in weights.items()},
                                twin / "model.safetensors")
    lines = read_sample("test", "en", 6)
    both = Translator.from_run(run_dir, "cpu", ensemble=[twin])
    wanted = both.translate_nbest(lines, DecodeConfig(beam=3, **SHORT), 2)
    alone = translator.translate_nbest(lines, DecodeConfig(beam=3, **SHORT), 2)
    assert [h.score for hs in wanted for h in hs] != [h.score for hs in alone for h in hs]
    server = Server(run_dir, *SHORT_OPTIONS, "--ensemble", str(twin))
    try:
        status, _, answer = call(server.url + "/translate", {"text": lines, "beam": 3,
                                                             "nbest": 2})
        info = call(server.url + "/info")[2]
    finally:
        assert server.stop() == 0
    assert status == 200, answer
    for line, hypotheses in zip(answer["translations"], wanted, strict=True):
        assert [h["text"] for h in line["nbest"]] == [h.text for h in hypotheses]
        assert [h["score"] for h in line["nbest"]] == pytest.approx(
            [h.score for h in hypotheses], rel=1e-4, abs=1e-4)
    parameters = sum(p.numel() for p in translator.run.model.parameters())
    assert info["ensemble"] == ["twin"] and info["parameters"] == 2 * parameters


def test_a_glossary_served_places_its_terms_as_the_translator_does(run_dir, translator,
                                                                   tmp_path):
    """The server's glossary (--glossary) and a request's own "glossary", which adds to it
    and overrides its entries."""
    glossary = tmp_path / "terms.tsv"
    glossary.write_text("man\tMann\ndog\tHund\n", encoding="utf-8")
    lines = ["A man and a dog.", "Two women.", "A man sleeps."]
    config = DecodeConfig(beam=3, glossary=str(glossary), **SHORT)
    wanted = translator.translate_nbest(lines, config, 2)
    assert all("Mann" in h.text for h in wanted[0] + wanted[2])
    own = translator.translate_nbest(lines, DecodeConfig(beam=3, **SHORT), 2,
                                     terms=[["Herr", "Hund"], ["Frauen"], ["Herr"]])
    assert all("Frauen" in h.text for h in own[1])
    inflected = translator.translate_nbest(lines, replace(config, glossary_inflect=True), 2)
    server = Server(run_dir, *SHORT_OPTIONS, "--glossary", str(glossary))
    try:
        answers = [call(server.url + "/translate", {"text": lines, "beam": 3, "nbest": 2,
                                                    **extra})
                   for extra in ({}, {"glossary": {"man": "Herr", "women": "Frauen"}},
                                 {"glossary_inflect": True})]
        refused = [call(server.url + "/translate", {"text": lines, **extra}) for extra in (
            {"beam": 1}, {"glossary": {"man": 3}}, {"glossary": ["man", "Mann"]},
            {"glossary": {"man": "Ωμέγα"}})]
        info = call(server.url + "/info")[2]
    finally:
        assert server.stop() == 0
    for (status, _, answer), hypotheses in zip(answers, (wanted, own, inflected)):
        assert status == 200, answer
        assert [[h["text"] for h in line["nbest"]] for line in answer["translations"]] == [
            [h.text for h in hyps] for hyps in hypotheses]
    assert [status for status, _, _ in refused] == [422] * 4
    assert "beam search" in refused[0][2]["error"]
    assert "must map source terms to target terms" in refused[1][2]["error"]
    assert "'Ωμέγα'" in refused[3][2]["error"]
    assert info["glossary_terms"] == 2 and info["defaults"]["glossary_inflect"] is False
    glossary.write_text("man\tMann\ndog\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["serve", str(run_dir), "--glossary", str(glossary),
                                      "--port", "0"])
    assert result.exit_code == 1
    assert result.output.strip() == (f"error: {glossary}:2: expected a source term, a tab and "
                                     "a target term")


def test_a_request_split_into_sentences_gets_the_translators_answer(server, translator):
    """Sentences of one request and lines of another share batches; each line is answered
    with its sentences' translations joined, and their alignments, as the Translator gives
    them; markup around sentences is put back."""
    test = read_sample("test", "en", 5)
    lines = [" ".join(test[:3]), test[3]]
    config = DecodeConfig(beam=5, split_sentences=True, **SHORT)
    wanted = translator.translate_nbest(lines, config, alignment=True)
    answers = [call(server.url + "/translate", body) for body in (
        {"text": lines, "split_sentences": True, "alignment": True},
        {"text": f"<b>{test[0]}</b> {test[4]}", "split_sentences": True, "markup": True})]
    assert [status for status, _, _ in answers] == [200, 200], answers
    assert [(line["text"], [tuple(pair) for pair in line["alignment"]])
            for line in answers[0][2]["translations"]] == [
        (hyps[0].text, hyps[0].alignment) for hyps in wanted]
    marked = answers[1][2]["translations"][0]["text"]
    assert marked.count("<b>") == marked.count("</b>") == 1, marked


def test_sigterm_answers_every_request_it_holds_then_exits_0(run_dir, translator):
    """Twenty requests of 40 lines (800 sentences of 40 decoder steps each) are accepted,
    then SIGTERM arrives: each gets its full answer, and the process exits with 0."""
    server = Server(run_dir, "--max-len-a", "0", "--max-len-b", "40", "--min-len", "40")
    lines = read_sample("val", "en", 40)
    try:
        with ThreadPoolExecutor(20) as clients:
            sent = [clients.submit(call, server.url + "/translate", {"text": lines, "beam": 2})
                    for _ in range(20)]
            deadline = time.monotonic() + 120
            while call(server.url + "/health")[2]["received"] < 20:  # all accepted
                assert time.monotonic() < deadline
                time.sleep(0.01)
            server.process.send_signal(signal.SIGTERM)
            answers = [future.result() for future in sent]
        assert server.process.wait(timeout=120) == 0
    finally:
        server.process.kill()
    wanted = translator.translate(lines, DecodeConfig(beam=2, max_len_a=0, max_len_b=40,
                                                      min_len=40))
    for status, _, answer in answers:
        assert status == 200, answer
        assert [t["text"] for t in answer["translations"]] == wanted


def test_a_request_whose_client_has_gone_is_not_decoded(run_dir):
    """A request arrives while the decoder is busy, and its client hangs up: it is dropped
    before its batch (a second of waiting for company, --max-wait-ms) is decoded. The next
    request asks for another beam, so it could not have shared that batch: two in all.
    While that request waits, the queue is full for a request of 100 lines (--max-queued-lines
    100): it is refused at once with a JSON 503 and Retry-After."""
    server = Server(run_dir, "--max-wait-ms", "1000", "--max-queued-lines", "100",
                    *SHORT_OPTIONS)
    host, port = server.url.removeprefix("http://").split(":")

    def health() -> dict:
        return call(server.url + "/health")[2]

    def wait_for(key: str, count: int) -> None:
        deadline = time.monotonic() + 120
        while health()[key] < count:
            assert time.monotonic() < deadline
            time.sleep(0.01)

    try:
        with ThreadPoolExecutor(1) as client:
            busy = client.submit(call, server.url + "/translate",
                                 {"text": read_sample("val", "en", 100)})
            wait_for("batches", 1)
            gone = http.client.HTTPConnection(host, int(port), timeout=60)
            gone.request("POST", "/translate", body=json.dumps({"text": "Hello."}),
                         headers={"Content-Type": "application/json"})
            wait_for("received", 2)
            assert health()["queued_lines"] == 1
            busy_now = http.client.HTTPConnection(host, int(port), timeout=60)
            busy_now.request("POST", "/translate",
                             body=json.dumps({"text": read_sample("val", "en", 100)}),
                             headers={"Content-Type": "application/json"})
            refused = busy_now.getresponse()
            assert (refused.status, refused.getheader("Retry-After"),
                    refused.getheader("Content-Type")) == (503, "1", "application/json")
            assert json.loads(refused.read())["error"].startswith(
                "busy: 1 line waits for the decoder, and 100 more would pass the server's 100")
            busy_now.close()
            gone.close()
            assert busy.result()[0] == 200
        assert call(server.url + "/translate", {"text": "Hello.", "beam": 3})[0] == 200
        assert health() == {"status": "ok", "received": 3, "answered": 3, "batches": 2,
                            "queued_lines": 0}
    finally:
        assert server.stop() == 0


def test_serve_refuses_other_engines_in_one_line(run_dir):
    result = CliRunner().invoke(app, ["serve", str(run_dir), "--engine", "onnx"])
    assert result.exit_code == 1
    assert result.output.strip() == \
        "error: --engine must be one of torch, ctranslate2 (got 'onnx')"


def test_serve_refuses_options_out_of_range_in_one_line(run_dir):
    for option, value, message in (
            ("--max-beam", "5000", "error: --max-beam must be at most 1000 (got 5000)"),
            ("--max-len-a", "nan", "error: --max-len-a must lie in [0, 1000] (got nan)"),
            ("--max-queued-lines", "99", "error: --max-queued-lines 99 is below --max-lines 100: "
                                         "a request of that many lines could never queue")):
        result = CliRunner().invoke(app, ["serve", str(run_dir), option, value, "--port", "0"])
        assert result.exit_code == 1
        assert result.output.strip() == message


def test_serve_ctranslate2_without_an_export_says_how_to_make_one(run_dir):
    pytest.importorskip("ctranslate2")
    result = CliRunner().invoke(app, ["serve", str(run_dir), "--engine", "ctranslate2",
                                      "--port", "0"])
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    assert result.output.startswith(f"error: {run_dir}: no CTranslate2 export")
    assert "nmt export" in result.output


def test_serve_without_the_extra_says_how_to_install_it(run_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "fastapi", None)  # import fastapi now fails
    monkeypatch.delitem(sys.modules, "nmt_cli.serve", raising=False)
    monkeypatch.delattr(nmt_cli, "serve", raising=False)
    result = CliRunner().invoke(app, ["serve", str(run_dir)])
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1
    assert 'pip install "nmt-cli[serve]"' in result.output


def test_serve_on_a_taken_port_fails_in_one_line(run_dir):
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["serve", str(run_dir), "--port", str(port)])
    assert result.exit_code == 1
    assert result.output.startswith(f"error: --host 127.0.0.1 --port {port}: cannot listen")


def test_connections_send_answers_without_waiting_for_acknowledgements():
    """Nagle's algorithm is off (TCP_NODELAY) on every connection the server accepts: with it
    on, each answer after a connection's first waited about 40 ms."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from nmt_cli.serve import listening_socket

    with (listening_socket("127.0.0.1", 0) as listener,
          socket.create_connection(listener.getsockname()[:2])):
        accepted, _ = listener.accept()
        with accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_the_model_is_loaded_on_the_thread_that_decodes(run_dir, monkeypatch):
    """The server runs PyTorch on one thread only (why: nmt_cli/batching.py)."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from nmt_cli import serve as serving
    from nmt_cli.service import ServeConfig

    threads, load_engine = {}, serving.load_engine

    def load(*args):
        threads["loads"] = threading.current_thread()
        return load_engine(*args)

    def create_app(engine, info, settings, decode, thread, glossary):
        threads["decodes"] = thread.submit(threading.current_thread).result()
        raise KeyboardInterrupt  # stop before uvicorn starts

    monkeypatch.setattr(serving, "load_engine", load)
    monkeypatch.setattr(serving, "create_app", create_app)
    monkeypatch.setattr(serving, "listening_socket", lambda host, port: None)
    monkeypatch.setattr(serving.signal, "signal", lambda *args: None)
    with pytest.raises(KeyboardInterrupt):
        serving.serve(run_dir, ServeConfig(), DecodeConfig(device="cpu"), "none", print)
    assert threads["loads"] is threads["decodes"] is not threading.main_thread()


# The batching worker alone, with a decoder that records its calls.

def recording_decoder(calls: list):
    def decode(lines: list[str], config: DecodeConfig, nbest: int, prefixes=None,
               alignment=False, terms=None):
        calls.append((list(lines), config.beam, nbest) + (("alignment",) if alignment else ())
                     + (("terms",) if terms else ()))
        if "boom" in lines:
            raise RuntimeError("this line breaks the decoder")
        if "unwritable" in lines:
            raise UserError("the target prefix 'x' has a character the model's vocabulary lacks")
        return [[Translation(f"{prefix}{line}|beam {config.beam}|{rank}"
                             + "".join(f"+{term}" for term in own), [], 0.0, -rank)
                 for rank in range(nbest)]
                for line, prefix, own in zip(lines, prefixes or [""] * len(lines),
                                             terms or [[]] * len(lines))]
    return decode


def run_batcher(jobs: list[tuple], max_lines: int,
                sampling: bool = False) -> tuple[list, list]:
    """Submit (lines, beam, nbest[, prefixes[, alignment[, terms]]]) jobs all at once; return the
    decoder's calls and each job's answer (or the exception it raised)."""
    calls: list = []

    async def main():
        batcher = Batcher(recording_decoder(calls), max_lines, max_wait=0.05)
        worker = asyncio.create_task(batcher.run())
        answers = await asyncio.gather(*(
            batcher.translate(lines, DecodeConfig(beam=beam, sampling=sampling), nbest,
                              *prefixes)
            for lines, beam, nbest, *prefixes in jobs), return_exceptions=True)
        worker.cancel()
        batcher.close()
        return answers

    return calls, asyncio.run(main())


def test_batcher_decodes_only_requests_with_the_same_settings_together():
    jobs = [([f"line {i}"], 1 + i % 2, 1 + (i % 4 == 1)) for i in range(12)]
    calls, answers = run_batcher(jobs, max_lines=6)
    assert sorted(calls) == [([f"line {i}" for i in range(0, 12, 2)], 1, 1),
                             ([f"line {i}" for i in range(1, 12, 2)], 2, 2)]
    for (lines, beam, nbest), answer in zip(jobs, answers):  # each its own n-best
        assert answer == [[Translation(f"{lines[0]}|beam {beam}|{rank}", [], 0.0, -rank)
                           for rank in range(nbest)]]


def test_sampled_requests_share_a_batch_only_with_requests_for_as_many_draws():
    jobs = [([f"line {i}"], 1, 1 + 2 * (i % 2)) for i in range(8)]
    calls, answers = run_batcher(jobs, max_lines=8, sampling=True)
    assert sorted(calls) == [([f"line {i}" for i in range(0, 8, 2)], 1, 1),
                             ([f"line {i}" for i in range(1, 8, 2)], 1, 3)]
    assert [len(answer[0]) for answer in answers] == [1, 3] * 4


def test_batcher_fills_batches_up_to_max_lines_in_order():
    jobs = [(["a", "b", "c"], 1, 1), (["d", "e"], 1, 1), (["f", "g"], 1, 1),
            ([str(i) for i in range(9)], 1, 1)]
    calls, answers = run_batcher(jobs, max_lines=6)
    assert [c[0] for c in calls] == [["a", "b", "c", "d", "e"], ["f", "g"],
                                     [str(i) for i in range(9)]]
    assert [[h[0].text.split("|")[0] for h in a] for a in answers] == [j[0] for j in jobs]


def test_requests_with_and_without_prefixes_share_a_batch_each_line_with_its_own():
    jobs = [(["a"], 1, 1), (["b", "c"], 1, 1, ["B: ", ""]), (["d"], 1, 1, ["D: "])]
    calls, answers = run_batcher(jobs, max_lines=6)
    assert [c[0] for c in calls] == [["a", "b", "c", "d"]]
    assert [[h[0].text for h in answer] for answer in answers] == [
        ["a|beam 1|0"], ["B: b|beam 1|0", "c|beam 1|0"], ["D: d|beam 1|0"]]


def test_requests_with_and_without_alignments_share_a_batch_that_computes_them():
    jobs = [(["a"], 1, 1), (["b", "c"], 1, 1, None, True), (["d"], 1, 1, None, False)]
    calls, answers = run_batcher(jobs, max_lines=6)
    assert calls == [(["a", "b", "c", "d"], 1, 1, "alignment")]
    assert [[h[0].text for h in answer] for answer in answers] == [
        ["a|beam 1|0"], ["b|beam 1|0", "c|beam 1|0"], ["d|beam 1|0"]]


def test_requests_with_and_without_terms_share_a_batch_each_line_with_its_own():
    jobs = [(["a"], 2, 1), (["b", "c"], 2, 1, None, False, [["B"], []]),
            (["d"], 2, 1, None, False, [["D", "E"]])]
    calls, answers = run_batcher(jobs, max_lines=6)
    assert calls == [(["a", "b", "c", "d"], 2, 1, "terms")]
    assert [[h[0].text for h in answer] for answer in answers] == [
        ["a|beam 2|0"], ["b|beam 2|0+B", "c|beam 2|0"], ["d|beam 2|0+D+E"]]


def test_a_request_that_breaks_the_decoder_fails_alone(capsys):
    """...and the server logs it; a request refused for its own sake (a 422) is not logged."""
    calls, answers = run_batcher([(["fine"], 1, 1), (["boom"], 1, 1), (["well"], 1, 1)], 6)
    assert isinstance(answers[1], RuntimeError)
    assert answers[0][0][0].text == "fine|beam 1|0" and answers[2][0][0].text == "well|beam 1|0"
    assert [c[0] for c in calls] == [["fine", "boom", "well"], ["fine"], ["boom"], ["well"]]
    assert capsys.readouterr().err.count("error: decoding a request failed") == 1
    _, answers = run_batcher([(["fine"], 1, 1), (["unwritable"], 1, 1)], 6)
    assert isinstance(answers[1], UserError) and answers[0][0][0].text == "fine|beam 1|0"
    assert capsys.readouterr().err == ""


def test_a_request_that_would_overfill_the_queue_is_refused_at_once():
    """While the decoder holds a batch, requests wait; one that would make more than
    max_queued lines wait is refused (Busy) without waiting, one that fits is taken, and a
    request of any size is taken when none waits."""
    release, calls = threading.Event(), []
    record = recording_decoder(calls)

    def decode(lines, *args, **kwargs):
        release.wait(60)
        return record(lines, *args, **kwargs)

    async def main():
        batcher = Batcher(decode, max_lines=2, max_wait=0, max_queued=3)
        worker = asyncio.create_task(batcher.run())
        config = DecodeConfig()
        held = asyncio.ensure_future(batcher.translate(["a", "b"], config))
        while not batcher.batches:  # the decoder holds "a" and "b"
            await asyncio.sleep(0.001)
        waiting = asyncio.ensure_future(batcher.translate(["c", "d"], config))
        await asyncio.sleep(0)
        queued = batcher.counts()["queued_lines"]
        with pytest.raises(Busy, match="2 lines wait for the decoder, and 2 more would pass "
                                       "the server's 3"):
            await batcher.translate(["e", "f"], config)
        fits = asyncio.ensure_future(batcher.translate(["g"], config))
        await asyncio.sleep(0)
        release.set()
        answers = [await job for job in (held, waiting, fits)]
        alone = await batcher.translate([str(i) for i in range(5)], config)  # none waits
        worker.cancel()
        batcher.close()
        return queued, answers, alone, batcher.counts()

    queued, answers, alone, counts = asyncio.run(main())
    assert queued == 2
    assert [[h[0].text.split("|")[0] for h in answer] for answer in answers] == [
        ["a", "b"], ["c", "d"], ["g"]]
    assert len(alone) == 5 and "e" not in [line for call in calls for line in call[0]]
    assert counts == {"received": 4, "answered": 4, "batches": 4, "queued_lines": 0}
