"""`nmt serve`: a trained run behind an HTTP JSON API, on FastAPI and uvicorn.

    POST /translate  {"text": "Hello." or ["Hello.", ...], "beam": 5, "nbest": 1, "prefix": ...}
    GET  /health     {"status": "ok", "received": N, "answered": N, "batches": N,
                      "queued_lines": N}
    GET  /info       the run's languages, architecture, parameters and best validation BLEU

This layer only reads bodies and writes answers. service.py checks each request and shapes
each answer; batching.py decodes concurrent requests together on one worker, through the same
Translator as `nmt translate`. Every refused request gets a 4xx answer {"error": "..."}, or a
503 with Retry-After while too many lines wait for the decoder (--max-queued-lines).
On SIGTERM the server stops accepting connections, answers the requests it holds, and exits 0.
Imported only by `nmt serve`: FastAPI and uvicorn come with the `serve` extra.
"""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from .batching import Batcher, Busy, decoding_thread
from .config import DecodeConfig
from .errors import UserError
from .glossary import Glossary, read_glossary
from .service import (
    ApiError,
    ServeConfig,
    check_settings,
    check_term_tokens,
    check_token_lengths,
    check_writable,
    parse_query,
    run_info,
    translations_json,
)
from .translate import Engine, load_engine

MAX_CONNECTIONS = 256  # open at once; uvicorn answers more with 503
RETRY_AFTER_S = 1  # seconds a busy server (--max-queued-lines) asks a client to wait
T = TypeVar("T")


def serve(run_dir: Path, settings: ServeConfig, decode: DecodeConfig, quantize: str,
          say: Callable[[str], None], ensemble: list[Path] | None = None) -> None:
    """Load the run (with the runs of `ensemble` beside it), listen on settings.host and
    settings.port, and answer until stopped."""
    check_settings(settings, decode)
    glossary = read_glossary(decode.glossary) if decode.glossary else None  # read once
    listener = listening_socket(settings.host, settings.port)  # a taken port fails at once
    # uvicorn stops gracefully on SIGTERM, then raises the signal again for the handler that
    # was there before it: with the default one the process would die of it. Before uvicorn
    # runs (while the model loads), SIGTERM ends the process at once, also with status 0.
    signal.signal(signal.SIGTERM, exit_cleanly)
    # as `nmt translate --engine` loads it: a run, or a CTranslate2 export of one; on the
    # thread that will decode with it, the one thread that runs PyTorch (batching.py)
    thread = decoding_thread()
    engine = thread.submit(load_engine, settings.engine, run_dir, decode.device, quantize,
                           decode.precision, ensemble).result()
    engine.language_tag(decode)  # a wrong --tgt-lang (without one, each line names its own)
    info = run_info(engine.run_dir, settings, decode, ensemble or [],
                    engine.target_languages, engine.max_positions - 1, glossary)
    app = create_app(engine, info, settings, decode, thread, glossary)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           limit_concurrency=MAX_CONNECTIONS))
    say(f"serving {run_dir} on {url(listener)} (POST /translate, GET /health, GET /info)")
    server.run(sockets=[listener])


def exit_cleanly(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def create_app(engine: Engine, info: dict[str, Any], settings: ServeConfig,
               decode: DecodeConfig, thread: ThreadPoolExecutor | None = None,
               glossary: Glossary | None = None) -> FastAPI:
    """The application: its routes, its error answers, and the batching worker it starts,
    which decodes on `thread` (default: a new decoding_thread()); `glossary` is the server's
    (--glossary), which a request's "glossary" adds to."""
    batcher = Batcher(engine.translate_nbest, decode.batch_size, settings.max_wait_ms / 1000,
                      thread, settings.max_queued_lines)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        worker = asyncio.create_task(batcher.run())
        try:
            yield
        finally:  # uvicorn gets here once every request it held has been answered
            worker.cancel()
            batcher.close()

    # redirect_slashes: "/translate/" is a 404, not a redirect to an address built from the
    # request's Host header
    app = FastAPI(lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None,
                  redirect_slashes=False)
    app.add_exception_handler(ApiError, refused)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, internal_error)

    @app.post("/translate")
    async def translate(request: Request) -> JSONResponse:
        query = parse_query(await read_body(request, settings.max_body), settings, decode,
                            engine.target_languages, glossary, engine.writable)
        aligned = [field for field, asked in (("alignment", query.alignment),
                                              ("markup", query.marked is not None),
                                              ("copy_unknown", query.copy_unknown)) if asked]
        if aligned:
            try:
                engine.check_alignment(f'"{aligned[0]}"')
            except UserError as e:
                raise ApiError(422, str(e)) from None
        name = "sentence" if query.split is not None else "line"
        check_token_lengths(engine.source_lengths(query.sentences(), query.config),
                            engine.max_positions - 1, name, "the model reads at most")
        if query.prefixes:  # each text encoded once, for its length and its spelling
            prefix_ids = engine.tokenizer.encode_tgt(query.prefixes)
            check_token_lengths(list(map(len, prefix_ids)), engine.max_positions, "prefix",
                                "a translation holds at most")
            check_writable(query.prefixes, prefix_ids, "prefix")
        if query.terms:
            distinct = sorted({term for own in query.terms for term in own})
            term_ids = dict(zip(distinct, engine.tokenizer.encode_tgt(distinct)))
            check_term_tokens([sum(len(term_ids[term]) for term in own) for own in query.terms],
                              settings, name)
            check_writable(distinct, [term_ids[term] for term in distinct], "term")
        texts = query.texts()
        try:
            found = await unless_gone(request, batcher.translate(
                query.sentences(), query.config, query.nbest, query.prefixes, bool(aligned),
                query.terms))
        except UserError as e:  # a glossary term or a prefix the model cannot write
            raise ApiError(422, str(e)) from None
        except Busy as e:
            raise ApiError(503, str(e), {"Retry-After": str(RETRY_AFTER_S)}) from None
        terms = query.terms
        if query.split is not None:
            found, terms = query.split.joined(found), query.split.per_line(terms)
        found = engine.finish(texts, found, query.alignment, query.marked, query.copy_unknown,
                              query.prefixes, terms)
        return JSONResponse(translations_json(found, query.nbest, query.alignment))

    @app.api_route("/health", methods=["GET", "HEAD"])  # HEAD: what some monitors send
    async def health() -> JSONResponse:
        return JSONResponse({"status": "ok", **batcher.counts()})

    @app.api_route("/info", methods=["GET", "HEAD"])
    async def run_information() -> JSONResponse:
        return JSONResponse(info)

    return app


async def unless_gone(request: Request, answer: Awaitable[T]) -> T:
    """What `answer` gives, unless the client closes its connection first: then `answer` is
    cancelled, so that a request still waiting for the decoder is never decoded (a batch
    under way runs to its end), and the client, gone, is answered 499."""
    wanted = asyncio.ensure_future(answer)
    gone = asyncio.ensure_future(disconnected(request))
    try:
        done, _ = await asyncio.wait((wanted, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not wanted.done():
            wanted.cancel()
    if wanted not in done:
        raise ApiError(499, "the client closed the connection")
    return wanted.result()


async def disconnected(request: Request) -> None:
    """Return once the client has closed the connection (its body has been read)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The request body, refused (413) as soon as it is known to exceed `max_bytes`."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise ApiError(413, f"the body has {int(declared):,} bytes; at most {max_bytes:,}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise ApiError(413, f"the body exceeds {max_bytes:,} bytes")
    return bytes(body)


async def refused(request: Request, error: ApiError) -> JSONResponse:
    return JSONResponse({"error": error.message}, status_code=error.status,
                        headers=error.headers)


async def http_error(request: Request, error: HTTPException) -> JSONResponse:
    """Starlette's own refusals (404 no such path, 405 wrong method) as JSON errors."""
    message = f"{request.method} {request.url.path[:200]}: {error.detail}"
    return JSONResponse({"error": message}, status_code=error.status_code,
                        headers=error.headers)


async def internal_error(request: Request, error: Exception) -> JSONResponse:
    return JSONResponse({"error": f"internal error ({type(error).__name__})"}, status_code=500)


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on host:port (port 0: a free one), or a one-line error."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        listener = socket.create_server((host, port), family=family, backlog=MAX_CONNECTIONS)
    except OSError as e:  # taken, not ours, or no such host
        raise UserError(f"--host {host} --port {port}: cannot listen there "
                        f"({e.strerror or e})") from None
    # Answers go out at once (TCP_NODELAY; each connection accepted inherits it). asyncio
    # would set it, but only on sockets made with the protocol named, which create_server's
    # are not: without it, every answer after a connection's first waited about 40 ms, its
    # body held back until the client acknowledged its headers, which clients delay.
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return listener


def url(listener: socket.socket) -> str:
    host, port = listener.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
