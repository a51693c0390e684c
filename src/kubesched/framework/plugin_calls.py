"""What the framework makes of a plugin's answer: the return value checked against what its
extension point accepts, and the Error status of a plugin that raised.

A plugin's bug fails the pod it was scheduling, never the scheduler: every extension point
turns an exception or a wrong return type into an Error status that names the plugin, the node
when there was one, and the exception (kept as the cause, for `--debug` tracebacks).
"""

from __future__ import annotations

from kubesched.framework.status import Status
from kubesched.framework.types import PreFilterResult

__all__ = [
    "OnNode",
    "PluginReturnError",
    "ScoreError",
    "checked_status",
    "crashed",
    "error_status",
    "pre_filter_result",
    "shown",
]


class PluginReturnError(TypeError):
    """A plugin returned something its extension point does not accept; the message says both."""


class ScoreError(Exception):
    """A Score plugin's non-success status, or a batch of scores of the wrong shape."""


class OnNode(Exception):
    """A per-node plugin call that failed, with the node it failed on."""

    def __init__(self, node: str, cause: BaseException) -> None:
        super().__init__(node)
        self.node = node
        self.cause = cause


def shown(value: object) -> str:
    """`bool (True)`: a value's type and a short repr, for "returned X; expected Y"."""
    text = repr(value)
    return f"{type(value).__name__} ({text if len(text) <= 60 else text[:57] + '...'})"


def checked_status(out: object, point: str) -> Status | None:
    """`out` if it is what an extension point returns (a Status or None), else PluginReturnError."""
    if out is None or isinstance(out, Status):
        return out
    raise PluginReturnError(f"returned {shown(out)} from {point}; expected a Status or None")


def pre_filter_result(out: object) -> tuple[PreFilterResult | None, Status | None]:
    """PreFilter returns a Status, None, or (PreFilterResult or None, Status or None)."""
    if isinstance(out, tuple) and len(out) == 2 and (out[0] is None or isinstance(out[0], PreFilterResult)):
        return out[0], checked_status(out[1], "PreFilter")
    if out is None or isinstance(out, Status):
        return None, out
    raise PluginReturnError(
        f"returned {shown(out)} from PreFilter; "
        "expected a Status, None, or (PreFilterResult or None, Status or None)"
    )


def crashed(running: str, plugin: str, exc: BaseException, node: str | None = None) -> Status:
    """The Error status of a plugin that raised (or returned the wrong type): what was running, on
    which node, and the exception's type and text. The exception is kept as the error's cause, so
    `--debug` can print its traceback."""
    if isinstance(exc, OnNode):
        node, exc = exc.node, exc.cause
    where = f' on node "{node}"' if node else ""
    detail = str(exc) if isinstance(exc, PluginReturnError) else f"{type(exc).__name__}: {exc}"
    status = error_status(f"{running}{where}: {detail}", plugin)
    if status.error is not None:
        status.error.__cause__ = exc
    return status


def error_status(message: str, plugin: str) -> Status:
    """An Error status charged to `plugin`."""
    st = Status.as_error(message)
    st.plugin = plugin
    return st
