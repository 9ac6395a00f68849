"""``python -m memworker``: serve the reference Worker (options override MEMWORKER_* variables)."""

from __future__ import annotations

import argparse
import logging
from dataclasses import fields
from typing import Sequence

from memworker.config import Settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memworker",
        description="Reference memory Worker speaking the claude-mem Worker API. Every option can also be "
        "set as MEMWORKER_<OPTION> (e.g. MEMWORKER_PORT=37777).",
    )
    defaults = Settings()
    for f in fields(Settings):
        if f.name in ("token", "llm_api_key"):
            continue
        default = getattr(defaults, f.name)
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(default), default=None,
                            help=f"default: {default!r}")
    parser.add_argument("--log-level", default="warning", help="uvicorn log level (default: warning)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    import uvicorn

    from memworker.app import create_app

    args = build_parser().parse_args(argv)
    overrides = {f.name: getattr(args, f.name, None) for f in fields(Settings)}
    settings = Settings.from_env(**overrides)
    logging.basicConfig(level=args.log_level.upper())
    print(f"memworker on http://{settings.host}:{settings.port} db={settings.db_path} "
          f"embedder={settings.embedder} extractor={settings.extractor}", flush=True)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=args.log_level,
                timeout_graceful_shutdown=5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
