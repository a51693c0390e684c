"""The `kubesched` command; one module of this package per subcommand.

Bad input ends with one line `kubesched: <file>: <field path>: <what is wrong>` and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
from collections.abc import Iterator, Sequence
from typing import NoReturn

from kubesched import __version__
from kubesched.errors import InputError, did_you_mean

EXIT_BAD_INPUT = 2
EXIT_INTERNAL_ERROR = 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    return _dispatch(parser, parser.parse_args(argv))


def entry() -> NoReturn:
    """The `kubesched` executable (and `python -m kubesched.cli`): `main`, then exit.

    A long-running server (`run`) has built a large heap; tearing the interpreter down collects all
    of it (measured: ~1.9 s after a shutdown that took 0.2 s) and would take a SIGTERM'd scheduler
    past its exit bound while a standby waits. Such a command sets `exit_without_teardown`: once it
    returned, everything it wrote is flushed and the process ends at once, as a Go binary does.
    Other commands exit normally (temporary directories and worker pools clean up at exit).
    """
    parser = _parser()
    args = parser.parse_args()
    code = _dispatch(parser, args)
    if getattr(args, "exit_without_teardown", False):
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    raise SystemExit(code)


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    try:
        code: int = args.func(args)
    except InputError as err:
        print(f"kubesched: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if getattr(args, "debug", True):  # commands without --debug keep Python's traceback
            raise
        print(
            f"kubesched: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL_ERROR
    return code


class _Parser(argparse.ArgumentParser):
    """argparse, plus "did you mean" for a mistyped value, subcommand or option."""

    def error(self, message: str) -> NoReturn:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            options = [c.strip().strip("'\"") for c in choice[2].split(",")]
            message += did_you_mean(choice[1], options)
        unknown = re.match(r"unrecognized arguments: (.*)", message)
        if unknown:
            known = sorted({o for p in _all_parsers(self) for o in p._option_string_actions})
            for word in unknown[1].split():
                if word.startswith("--"):
                    message += did_you_mean(word.split("=")[0], known)
                    break
        super().error(message)


def _all_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_parsers(sub)


def _parser() -> argparse.ArgumentParser:
    from kubesched.cli.capacity import add_capacity_command
    from kubesched.cli.compare import add_compare_command
    from kubesched.cli.config import add_config_commands
    from kubesched.cli.explain import add_explain_command
    from kubesched.cli.extender import add_extender_command
    from kubesched.cli.plugins import add_plugins_command
    from kubesched.cli.record import add_record_command
    from kubesched.cli.run import add_run_command
    from kubesched.cli.simulate import add_simulate_command
    from kubesched.cli.sweep import add_sweep_command

    parser: argparse.ArgumentParser = _Parser(
        prog="kubesched",
        description="A Kubernetes scheduler framework in Python: plugins, profiles, an explaining simulator.",
    )
    parser.add_argument("--version", action="version", version=f"kubesched {__version__}")
    sub = parser.add_subparsers(metavar="COMMAND")

    add_simulate_command(sub)
    add_explain_command(sub)
    add_capacity_command(sub)
    add_compare_command(sub)
    add_sweep_command(sub)
    add_record_command(sub)
    add_config_commands(sub)
    add_plugins_command(sub)
    add_run_command(sub)
    add_extender_command(sub)
    return parser
