"""``locomo-kit`` command line: one module per command, each a thin wrapper over the library functions the
notebooks call (``add_parser(sub)`` adds the command, ``handle(args)`` runs it); the entry point is
``locomo_kit.cli:main``."""

from locomo_kit.cli.common import CliError
from locomo_kit.cli.main import COMMANDS, build_parser, main

__all__ = ["COMMANDS", "CliError", "build_parser", "main"]
