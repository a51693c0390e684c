"""Status codes and the Status a plugin returns: upstream's codes, names and semantics.

`None` always means Success, so a plugin may `return None` on the happy path.
"""

from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    def __str__(self) -> str:
        return _CODE_NAMES[self]


_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}

_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


class Status:
    """The result of running a plugin: a code, human-readable reasons, and who said it."""

    __slots__ = ("code", "error", "plugin", "reasons")

    def __init__(
        self,
        code: Code = Code.SUCCESS,
        *reasons: str,
        error: BaseException | None = None,
        plugin: str = "",
    ) -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.error = error
        self.plugin = plugin

    # -- constructors named after the codes, for plugin authors
    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE, *reasons)

    @classmethod
    def unschedulable_and_unresolvable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)

    @classmethod
    def as_error(cls, error: BaseException | str) -> Status:
        """An Error status: something unexpected; the attempt fails and the pod backs off."""
        exc = error if isinstance(error, BaseException) else RuntimeError(error)
        return cls(Code.ERROR, error=exc)

    @classmethod
    def wait(cls, *reasons: str) -> Status:
        return cls(Code.WAIT, *reasons)

    @classmethod
    def skip(cls) -> Status:
        """A Skip status: the one shared, unchangeable instance (PreFilter and PreScore plugins
        answer it about a million times in a 100,000-event replay), or a new one of a subclass."""
        return _SKIP if cls is Status else cls(Code.SKIP)

    @classmethod
    def pending(cls, *reasons: str) -> Status:
        return cls(Code.PENDING, *reasons)

    # -- queries
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending: the pod, not the scheduler, is stuck."""
        return self.code in _REJECTED

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def all_reasons(self) -> list[str]:
        """The error text (if any) followed by the reasons, as upstream's Reasons()."""
        if self.error is not None:
            return [str(self.error), *self.reasons]
        return list(self.reasons)

    def message(self) -> str:
        return ", ".join(self.all_reasons())

    def with_plugin(self, plugin: str) -> Status:
        """Record which plugin produced this status (kept if already set); returns the status
        (a copy, for the shared Skip)."""
        if not self.plugin:
            self.plugin = plugin
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return (self.code, self.all_reasons()) == (other.code, other.all_reasons())

    def __hash__(self) -> int:
        return hash((self.code, tuple(self.all_reasons())))

    def __repr__(self) -> str:
        plugin = f" plugin={self.plugin!r}" if self.plugin else ""
        return f"Status({self.code}{plugin}: {self.message()!r})"


class _SharedStatus(Status):
    """`Status.skip()`'s one instance: attributes cannot be set (it would change every Skip), and
    `with_plugin` returns a plain copy naming the plugin. Where the framework records a plugin on a
    Skip, the Skip then ends as an Error naming the plugin itself, so nothing reads the copy there."""

    __slots__ = ()

    def __init__(self, code: Code) -> None:
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "reasons", ())
        object.__setattr__(self, "error", None)
        object.__setattr__(self, "plugin", "")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(
            f"the shared {self.code} status cannot be changed; make a Status({self.code}) instead"
        )

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, plugin=plugin)

    def __reduce__(self) -> tuple[object, tuple[()]]:
        return Status.skip, ()  # copied or unpickled, it is the shared one again


_SKIP: Status = _SharedStatus(Code.SKIP)


def is_success(status: Status | None) -> bool:
    """`None` or a Success status."""
    return status is None or status.code == Code.SUCCESS
