"""Errors that reach a user: one line naming where the problem is and what is wrong."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class InputError(Exception):
    """Bad input (a file, an object, a config field, an HTTP body).

    Rendered as `source: path: message`, for example
    `sched.yaml: profiles[1].plugins.score.enabled[0].weight: must be positive`.
    The CLI prints `str(err)` and exits 2; servers answer 400 with it.
    """

    def __init__(self, message: str, *, source: str = "", path: str = "") -> None:
        self.message = message
        self.source = source
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [p for p in (self.source, self.path) if p]
        parts.append(self.message)
        return ": ".join(parts)

    def at(self, *, source: str | None = None, path_prefix: str = "") -> InputError:
        """The same error located in `source` and/or under `path_prefix` (e.g. `items[3]`)."""
        path = self.path
        if path_prefix:
            path = f"{path_prefix}.{path}" if path and not path.startswith("[") else f"{path_prefix}{path}"
        return InputError(self.message, source=source if source is not None else self.source, path=path)


class FieldErrors(InputError):
    """Several validation failures at once; the first line names them all, `;`-separated."""

    def __init__(self, errors: list[InputError], *, source: str = "") -> None:
        self.errors = errors
        text = "; ".join(str(InputError(e.message, path=e.path)) for e in errors)
        super().__init__(text, source=source)


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean "x"?)` naming the closest candidate, or "" when none is close."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""
