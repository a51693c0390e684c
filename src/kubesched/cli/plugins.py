"""`kubesched plugins`: the plugins this installation knows, and the extension points of each.

Built-in plugins first (upstream's default profile in its order, then the opt-in ones), then those
other packages install under the `kubesched.plugins` entry-point group. Plugins named in a config as
`module:Class` are not listed: they are found when the config is read.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_plugins_command"]


def add_plugins_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `plugins`; it sets `func(args) -> int`."""
    p = subparsers.add_parser(
        "plugins",
        help="list the built-in and installed plugins and the extension points each implements",
        description=(
            "List every plugin kubesched can enable by name: the built-in ones and those installed by "
            "other packages (entry-point group kubesched.plugins), with the extension points each "
            "implements, its weight in the default profile, and its args type."
        ),
    )
    p.add_argument("--output", "-o", choices=("table", "json"), default="table", help="output format")
    p.set_defaults(func=_plugins)


def _plugins(args: argparse.Namespace) -> int:
    import msgspec

    from kubesched.cli._console import stdout_console

    rows = plugin_rows()
    if args.output == "json":
        sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(rows), indent=2) + b"\n")
        return 0
    from rich.markup import escape
    from rich.table import Table

    table = Table(header_style="bold", show_edge=False, pad_edge=False)
    for column in ("PLUGIN", "EXTENSION POINTS", "DEFAULT PROFILE", "ARGS", "FROM"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(
            escape(str(row["name"])),
            escape(", ".join(row["extensionPoints"])),  # type: ignore[arg-type]
            escape(str(row["defaultProfile"] or "-")),
            escape(str(row["args"] or "-")),
            escape(str(row["from"])),
        )
    stdout_console().print(table)
    return 0


def plugin_rows() -> list[dict[str, object]]:
    """One dict per known plugin: name, extensionPoints, defaultProfile, args, from."""
    from importlib.metadata import entry_points

    from kubesched.config.defaults import UPSTREAM_DEFAULT_PLUGINS
    from kubesched.framework.registry import ENTRY_POINT_GROUP
    from kubesched.plugins import builtin_plugin_names, default_registry

    registry = default_registry()
    builtin = set(builtin_plugin_names())
    defaults = dict(UPSTREAM_DEFAULT_PLUGINS)
    installed = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    order = {name: i for i, (name, _) in enumerate(UPSTREAM_DEFAULT_PLUGINS)}
    names = sorted(registry, key=lambda n: (n not in builtin, order.get(n, len(order)), n))
    rows: list[dict[str, object]] = []
    for name in names:
        cls = registry[name]
        if name in defaults:
            weight = defaults[name]
            in_default: str | None = f"yes (score weight {weight})" if weight else "yes"
        else:
            in_default = None
        if name in builtin:
            origin = "built-in"
        else:
            ep = installed.get(name)
            dist = getattr(ep, "dist", None) if ep is not None else None
            origin = f"{dist.name} {dist.version}" if dist is not None else f"{cls.__module__}"
        args_type = registry.args_type(name)
        rows.append(
            {
                "name": name,
                "extensionPoints": registry.extension_points(name),
                "defaultProfile": in_default,
                "args": args_type.__name__ if args_type is not None else None,
                "from": origin,
            }
        )
    return rows
