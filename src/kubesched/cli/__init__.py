"""The `kubesched` command; one module of this package per subcommand.

Bad input ends with one line `kubesched: <file>: <field path>: <what is wrong>` and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
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
#: Commands that set `cyclic_gc=False` or `collect_once_started` (see `entry`).
_WITHOUT_GC_FROM_START = frozenset({"run", "explain"})


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser(argv)
    return _dispatch(parser, parser.parse_args(argv))


def entry() -> NoReturn:
    """The `kubesched` executable (and `python -m kubesched.cli`): `main`, then exit.

    A long-running server (`run`) has built a large heap; tearing the interpreter down collects all
    of it (measured: ~1.9 s after a shutdown that took 0.2 s) and would take a SIGTERM'd scheduler
    past its exit bound while a standby waits. Such a command sets `exit_without_teardown`: once it
    returned, everything it wrote is flushed and the process ends at once, as a Go binary does.
    Other commands exit normally (temporary directories and worker pools clean up at exit).

    A one-shot command whose heap lives until it exits sets `cyclic_gc=False`: the process runs
    without the cyclic garbage collector, which would only walk that heap again and again as it
    grows. A server that builds its long-lived state first sets `collect_once_started` and turns it on
    itself when that is done (`run`: once its informers synced). The other commands keep it on from
    the start: with it off while `extender` imported and parsed, its prioritize p99 with 4 clients at
    5,000 nodes went from 10 to 50 ms (benchmarks/ab.py, 3 rounds), and freezing that heap did not
    help. (`main`, which tests call in their own process, leaves the collector alone.)

    Those two kinds of command (`_WITHOUT_GC_FROM_START`) turn it off before their own imports and
    the parsing of their flags: those build the modules' objects, which live as long as the process,
    and the collector walked them once fully and a dozen times in part meanwhile (about 0.03 of the
    0.4 CPU s `run` spends before its informers start).
    """
    if sys.argv[1:2] and sys.argv[1] in _WITHOUT_GC_FROM_START:
        gc.disable()
    parser = _parser()
    args = parser.parse_args()
    if not getattr(args, "cyclic_gc", True) or getattr(args, "collect_once_started", False):
        gc.disable()
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


#: Each subcommand, in the order `--help` lists them: the module that adds it, and its function.
#: A command line naming one only imports that one: importing every command's module (and what
#: each imports at module level) cost ~1 CPU second per invocation, half of `kubesched explain`.
_COMMANDS: dict[str, tuple[str, str]] = {
    "simulate": ("simulate", "add_simulate_command"),
    "explain": ("explain", "add_explain_command"),
    "capacity": ("capacity", "add_capacity_command"),
    "compare": ("compare", "add_compare_command"),
    "sweep": ("sweep", "add_sweep_command"),
    "record": ("record", "add_record_command"),
    "trace": ("trace", "add_trace_command"),
    "config": ("config", "add_config_commands"),
    "plugins": ("plugins", "add_plugins_command"),
    "run": ("run", "add_run_command"),
    "extender": ("extender", "add_extender_command"),
}


def _parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: with only its subcommand when `argv` starts with one, with all of
    them otherwise (help, a mistyped command: "did you mean" needs every name)."""
    parser: argparse.ArgumentParser = _Parser(
        prog="kubesched",
        description="A Kubernetes scheduler framework in Python: plugins, profiles, an explaining simulator.",
    )
    parser.add_argument("--version", action="version", version=f"kubesched {__version__}")
    sub = parser.add_subparsers(metavar="COMMAND")
    args = list(sys.argv[1:] if argv is None else argv)
    names = [args[0]] if args and args[0] in _COMMANDS else list(_COMMANDS)
    for name in names:
        module, function = _COMMANDS[name]
        getattr(importlib.import_module(f"kubesched.cli.{module}"), function)(sub)
    return parser
