"""Command-line conventions shared by the subcommands that take kube-scheduler's flags.

Go's pflag, which kube-scheduler uses, writes booleans as `--flag`, `--flag=true` or `--flag=false`
and durations as `15s`; `pflag_bool` and `go_duration` parse them the same way. A kube-scheduler flag
kubesched cannot honour is registered with `add_unsupported`: given, it stops the command with one
line naming it (see `reject_unsupported`), rather than being silently ignored.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from typing import Any

from kubesched.config import FeatureGates, parse_duration, parse_feature_gates
from kubesched.errors import InputError

__all__ = [
    "add_feature_gates_flag",
    "add_unsupported",
    "feature_gates",
    "go_duration",
    "pflag_bool",
    "reject_unsupported",
    "string_list",
]

log = logging.getLogger("kubesched.features")

_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def pflag_bool(text: str) -> bool:
    """strconv.ParseBool, as pflag parses `--flag=value`."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r} (true or false)")


def go_duration(text: str) -> float:
    """A Go duration (`15s`, `1m30s`) in seconds."""
    try:
        return parse_duration(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def string_list(text: str) -> list[str]:
    """pflag's StringSlice: comma-separated, empty items dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def add_bool_flag(parser: argparse._ActionsContainer, flag: str, help: str, **kwargs: Any) -> None:
    """`--flag` / `--flag=true|false`, default None (not given), so a flag can override a file."""
    parser.add_argument(flag, nargs="?", const=True, type=pflag_bool, metavar="BOOL", help=help, **kwargs)


class _Unsupported(argparse.Action):
    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        *,
        message: str,
        accept: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        self.message = message
        self.accept = tuple(accept)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option: str | None = None,
    ) -> None:
        value = values if isinstance(values, str) else ("true" if values is None else str(values))
        if value in self.accept:
            return
        given: list[str] = getattr(namespace, "unsupported_flags", None) or []
        given.append(f"{option}: {self.message}")
        namespace.unsupported_flags = given


def add_unsupported(
    parser: argparse._ActionsContainer,
    flag: str,
    reason: str,
    *,
    takes_value: bool = True,
    accept: Sequence[str] = (),
    message: str | None = None,
) -> None:
    """Register a kube-scheduler flag kubesched cannot honour; values in `accept` are fine (no-ops).

    `message` replaces the standard wording (for a flag kubesched itself used to have).
    """
    parser.add_argument(
        flag,
        action=_Unsupported,
        message=message or f"kubesched cannot honour this kube-scheduler flag ({reason})",
        accept=accept,
        nargs=None if takes_value else "?",
        dest=f"unsupported_{flag.lstrip('-').replace('-', '_')}",
        help=argparse.SUPPRESS,
    )


def reject_unsupported(args: argparse.Namespace) -> None:
    """InputError for the first unsupported flag given (the CLI prints it on one line, exit 2)."""
    given = getattr(args, "unsupported_flags", None)
    if given:
        raise InputError(given[0])


def add_feature_gates_flag(parser: argparse._ActionsContainer) -> None:
    """kube-scheduler's `--feature-gates A=true,B=false`, repeatable (into `args.feature_gates`)."""
    parser.add_argument(
        "--feature-gates",
        action="append",
        default=[],
        metavar="NAME=BOOL,...",
        help="kube-scheduler v1.37.2's feature gates (repeatable); a gate that changes scheduling "
        "and that kubesched does not implement is refused, one the scheduler does not read is ignored",
    )


def feature_gates(args: argparse.Namespace) -> FeatureGates:
    """The gates of `--feature-gates`, checked as the binary checks them and refused where kubesched
    cannot follow them; the gates it accepts and ignores are logged once, here."""
    gates = parse_feature_gates(args.feature_gates)
    gates.refuse_unimplemented()
    notice = gates.ignored_notice()
    if notice:
        log.warning("%s", notice)
    return gates
