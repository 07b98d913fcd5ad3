"""The `nmt` command, and `python -m nmt_cli`."""

import sys


def main() -> None:
    try:
        from .cli import app
    except KeyboardInterrupt:  # Ctrl-C while the command loads: no traceback
        sys.exit(130)
    app(prog_name="nmt")


if __name__ == "__main__":
    main()
