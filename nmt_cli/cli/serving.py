"""`nmt serve`: a run behind an HTTP JSON API (the `serve` extra: FastAPI and uvicorn)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..config import ENGINES, DecodeConfig, ServeConfig
from ..errors import UserError
from .common import EnsembleOption, app, err, user_errors, with_decode_options

DEFAULTS = ServeConfig()
SERVE_PACKAGES = ("fastapi", "starlette", "pydantic", "uvicorn")


@app.command()
@user_errors
@with_decode_options(requests_bring_terms=True)
def serve(
    decode: DecodeConfig,
    quantize: str,
    run: Annotated[Path | None, typer.Argument(
        help="Run directory to serve (default: the most recent run under runs/).")] = None,
    host: Annotated[str, typer.Option(
        help="Address to listen on; the default answers this machine only.")] = DEFAULTS.host,
    port: Annotated[int, typer.Option(help="Port to listen on; 0 picks a free one.")
                    ] = DEFAULTS.port,
    engine: Annotated[str, typer.Option(
        help=f"What decodes: {', '.join(ENGINES)}.")] = DEFAULTS.engine,
    max_lines: Annotated[int, typer.Option(help="Lines per request, at most.")
                         ] = DEFAULTS.max_lines,
    max_chars: Annotated[int, typer.Option(help="Characters per line, at most.")
                         ] = DEFAULTS.max_chars,
    max_beam: Annotated[int, typer.Option(help="Widest beam a request may ask for.")
                        ] = DEFAULTS.max_beam,
    max_wait_ms: Annotated[float, typer.Option(
        help="How long a batch waits for more requests before decoding.")
    ] = DEFAULTS.max_wait_ms,
    max_term_tokens: Annotated[int, typer.Option(
        help="Target tokens of the glossary terms a line's translation must hold, at most.")
    ] = DEFAULTS.max_term_tokens,
    max_queued_lines: Annotated[int, typer.Option(
        help="Lines that may wait for the decoder; a request that would make them more is "
        "refused with 503 and Retry-After, to be sent again later.")
    ] = DEFAULTS.max_queued_lines,
    ensemble: EnsembleOption = None,
):
    """Serve a run over HTTP: POST /translate, GET /health, GET /info (JSON).

    The decoding options are defaults: a request may set its own beam and nbest.

    Concurrent requests are decoded together, up to --batch-size lines at a time.

    SIGTERM stops it once the requests it holds are answered."""
    from ..checkpoint import latest_run

    settings = ServeConfig(host, port, engine, max_lines, max_chars, max_beam, max_wait_ms,
                           max_term_tokens, max_queued_lines)
    server = server_module()
    if not is_loopback(host):
        say(f"warning: --host {host} answers other machines too, and nmt serve has no "
            "authentication")
    server.serve(run or latest_run(named="name RUN"), settings, decode, quantize, say,
                 ensemble or [])


def say(message: str) -> None:
    err.print(escape(message), highlight=False, soft_wrap=True)


def server_module():
    """nmt_cli.serve, or a one-line error when the `serve` extra is not installed."""
    try:
        from .. import serve
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in SERVE_PACKAGES:
            raise
        raise UserError(f'nmt serve needs FastAPI and uvicorn ({e.name} is missing): '
                        'pip install "nmt-cli[serve]"') from None
    return serve


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name
        return host == "localhost"
