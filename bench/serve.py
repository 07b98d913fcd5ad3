"""Throughput of `nmt serve`: sentences per second for one client and for 20 at once.

Serves a run (--run, or a small Transformer trained for --train-time on Multi30k into
bench/out/serve/run, reused once there) with 2 threads on the CPU, and sends it
test_2016_flickr sentences, one per request. Each client waits for its answer before sending
its next request, over a connection it keeps open. One client sees no batching; concurrent
clients' requests are gathered into batches and decoded together, so their sentences per
second should be a multiple of one client's (the target on 2 cores: at least 4x with 20).

    python -m bench.serve [--run DIR] [--clients 20] [--beams 1 5] [--data DIR] [--json FILE]
"""

from __future__ import annotations

import gzip
import http.client
import json
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .common import OUT, ROOT, add_data_option, multi30k_dir, new_parser, two_threads_env

NMT = [sys.executable, "-m", "nmt_cli"]


def trained_run(corpus: Path, train_time: str) -> Path:
    """bench/out/serve/run: the small `transformer` preset (d_model 128, 2 + 2 layers)
    trained on Multi30k for `train_time`."""
    run = OUT / "serve" / "run"
    if not (run / "model.safetensors").exists():
        print(f"training a small Transformer on Multi30k for {train_time}", file=sys.stderr,
              flush=True)
        subprocess.run([*NMT, "train", "--data", str(corpus), "--preset", "transformer",
                        "--max-time", train_time, "--set", "train.validate_every=200",
                        "--run", str(run)], check=True, stdout=subprocess.DEVNULL,
                       env=two_threads_env(), cwd=ROOT)
    return run


def start_server(run: Path) -> tuple[subprocess.Popen, str]:
    """`nmt serve` on a free port, and its address once it prints it."""
    server = subprocess.Popen([*NMT, "serve", str(run), "--port", "0", "--device", "cpu"],
                              stderr=subprocess.PIPE, text=True, env=two_threads_env(), cwd=ROOT)
    for line in server.stderr:
        if found := re.search(r" on (http://\S+) ", line):
            threading.Thread(target=server.stderr.read, daemon=True).start()  # keep it flowing
            return server, found.group(1)
    raise SystemExit(f"nmt serve exited with {server.wait()}")


def client(url: str, sentences: list[str], beam: int) -> None:
    """Send one sentence a request, each after the answer to the last."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=600)
    for sentence in sentences:
        connection.request("POST", "/translate", json.dumps({"text": sentence, "beam": beam}),
                           {"Content-Type": "application/json"})
        answer = connection.getresponse()
        body = answer.read()
        if answer.status != 200:
            raise SystemExit(f"POST /translate answered {answer.status}: {body[:200]!r}")
    connection.close()


def health(url: str) -> dict:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    connection.request("GET", "/health")
    return json.loads(connection.getresponse().read())


def throughput(url: str, sentences: list[str], clients: int, beam: int) -> dict:
    """Sentences per second with `clients` clients sharing `sentences`, and the mean number
    of requests the server decoded together."""
    before = health(url)
    shares = [sentences[i::clients] for i in range(clients)]
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(lambda share: client(url, share, beam), shares))
    seconds = time.perf_counter() - start
    after = health(url)
    batches = after["batches"] - before["batches"]
    return {"sentences": len(sentences), "seconds": round(seconds, 2),
            "sentences_per_s": len(sentences) / seconds,
            "requests_per_batch": (after["received"] - before["received"]) / max(batches, 1)}


def measure(url: str, sentences: list[str], clients: int, beams: list[int],
            alone: int) -> dict:
    results = {}
    client(url, sentences[:5], beams[0])  # warm up: first calls allocate
    for beam in beams:
        print(f"beam {beam}: 1 client, then {clients}", file=sys.stderr, flush=True)
        one = throughput(url, sentences[:alone], 1, beam)
        many = throughput(url, sentences, clients, beam)
        results[f"beam {beam}"] = {"one_client": one, "clients": many, "ratio":
                                   many["sentences_per_s"] / one["sentences_per_s"]}
    return results


def print_table(results: dict, clients: int) -> None:
    print("\nsentences/s of nmt serve, one sentence a request (mean requests per batch)\n")
    print(f"| search | 1 client | {clients} clients | ratio |")
    print("| --- | --- | --- | --- |")
    for name, r in results.items():
        one, many = r["one_client"], r["clients"]
        print(f"| {name} | {one['sentences_per_s']:.1f} ({one['requests_per_batch']:.1f}) | "
              f"{many['sentences_per_s']:.1f} ({many['requests_per_batch']:.1f}) | "
              f"{r['ratio']:.2f}x |")


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--run", type=Path, help="run to serve (default: train one)")
    parser.add_argument("--train-time", default="3m", help="training time without --run")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--sentences", type=int, default=400,
                        help="sentences the concurrent clients send in all")
    parser.add_argument("--alone", type=int, default=100, help="sentences one client sends")
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    add_data_option(parser)
    parser.add_argument("--json", type=Path, default=OUT / "serve.json")
    args = parser.parse_args()
    corpus = multi30k_dir(args.data)
    run = args.run or trained_run(corpus, args.train_time)
    text = gzip.decompress((corpus / "test_2016_flickr.en.gz").read_bytes()).decode()
    sentences = text.splitlines()[: args.sentences]
    server, url = start_server(run)
    try:
        results = measure(url, sentences, args.clients, args.beams, args.alone)
    finally:
        server.terminate()
        server.wait(timeout=120)
    print_table(results, args.clients)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"run": str(run), "clients": args.clients,
                                     "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
