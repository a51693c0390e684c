"""Reading the Alibaba "openb" GPU trace (cluster-trace-gpu-v2023): its node list and its task list.

Node lists have the columns `sn,cpu_milli,memory_mib,gpu,model`; task lists
`name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...,creation_time,...]` (the published
variants drop the columns after `gpu_milli`; columns the import does not use are ignored). A bad
row is one line naming the file, the row (1 is the header, as an editor numbers lines) and the
column, so that a hand-edited trace can be fixed where it is wrong.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kubesched.errors import InputError
from kubesched.plugins.contrib.gpu_share.shapes import GPU_MILLI

__all__ = ["GPU_MILLI", "TraceNode", "TraceTask", "read_nodes", "read_tasks"]

_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu")
_TASK_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu")


@dataclass(frozen=True, slots=True)
class TraceNode:
    """One machine: CPU in millicores, memory in MiB, its GPUs and their model ("" when it has none)."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class TraceTask:
    """One task. `gpu_milli` is the share of each GPU it takes (1000: whole GPUs, 0: no GPU);
    `models` the GPU models it accepts (empty: any); `created` seconds since the trace's start,
    None when the list has no `creation_time` column."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    models: tuple[str, ...]
    created: float | None

    @property
    def shared(self) -> bool:
        """A share of one GPU that other tasks may use the rest of."""
        return self.num_gpu == 1 and self.gpu_milli < GPU_MILLI

    @property
    def gpu_total(self) -> int:
        """GPU share asked for in all (milli)."""
        return self.num_gpu * self.gpu_milli


def read_nodes(path: str | Path) -> list[TraceNode]:
    """The nodes of a node list, in file order."""
    nodes: list[TraceNode] = []
    seen: set[str] = set()
    for row in _rows(path, _NODE_COLUMNS):
        nodes.append(
            TraceNode(
                name=row.name("sn", seen),
                cpu_milli=row.whole("cpu_milli"),
                memory_mib=row.whole("memory_mib"),
                gpus=row.whole("gpu"),
                model=row.text("model"),
            )
        )
    return nodes


def read_tasks(path: str | Path) -> list[TraceTask]:
    """The tasks of a task list, in file order."""
    tasks: list[TraceTask] = []
    seen: set[str] = set()
    for row in _rows(path, _TASK_COLUMNS):
        name = row.name("name", seen)
        num_gpu = row.whole("num_gpu")
        tasks.append(
            TraceTask(
                name=name,
                cpu_milli=row.whole("cpu_milli"),
                memory_mib=row.whole("memory_mib"),
                num_gpu=num_gpu,
                gpu_milli=row.gpu_milli(num_gpu),
                models=tuple(m for m in (part.strip() for part in row.text("gpu_spec").split("|")) if m),
                created=row.seconds("creation_time"),
            )
        )
    return tasks


@dataclass(frozen=True, slots=True)
class _Row:
    """One data row and where it is, for errors that name the file, the row and the column."""

    source: str
    line: int
    values: Mapping[str, str | None]

    def error(self, column: str, message: str) -> InputError:
        where = f"row {self.line}: column {column}" if column else f"row {self.line}"
        return InputError(message, source=self.source, path=where)

    def text(self, column: str) -> str:
        return (self.values.get(column) or "").strip()

    def name(self, column: str, seen: set[str]) -> str:
        name = self.text(column)
        if not name:
            raise self.error(column, "required (a name)")
        if name in seen:
            raise self.error(column, f'"{name}" appears twice')
        seen.add(name)
        return name

    def whole(self, column: str) -> int:
        text = self.text(column)
        try:
            value = int(text)
        except ValueError:
            raise self.error(column, f"expected a whole number, got {_shown(text)}") from None
        if value < 0:
            raise self.error(column, f"must not be negative, got {value}")
        return value

    def gpu_milli(self, num_gpu: int) -> int:
        """The per-GPU share; absent (column or cell) means whole GPUs, as the authors read it."""
        if not self.text("gpu_milli"):
            return GPU_MILLI if num_gpu else 0
        milli = self.whole("gpu_milli")
        if num_gpu == 0 and milli != 0:
            raise self.error("gpu_milli", f"must be 0 for a task without GPUs (num_gpu 0), got {milli}")
        if num_gpu > 0 and not 0 < milli <= GPU_MILLI:
            raise self.error("gpu_milli", f"must be 1-1000 (the share of each GPU), got {milli}")
        if num_gpu > 1 and milli != GPU_MILLI:
            raise self.error("gpu_milli", f"a task of {num_gpu} GPUs takes them whole (1000), got {milli}")
        return milli

    def seconds(self, column: str) -> float | None:
        """Seconds since the trace's start; None when the list has no such column."""
        if column not in self.values:
            return None
        text = self.text(column)
        try:
            value = float(text)
        except ValueError:
            raise self.error(column, f"expected a number of seconds, got {_shown(text)}") from None
        if not math.isfinite(value) or value < 0:
            raise self.error(column, f"must be a finite number of seconds, not negative, got {text}")
        return value


def _rows(path: str | Path, required: tuple[str, ...]) -> Iterator[_Row]:
    source = str(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            missing = [c for c in required if c not in header]
            if missing:
                raise InputError(
                    f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                    f"(expected {','.join(required)},...)",
                    source=source,
                    path="row 1",
                )
            for values in reader:
                row = _Row(source, reader.line_num, values)
                extra = values.get(None)
                if extra:
                    raise row.error("", f"{len(header) + len(extra)} fields, the header names {len(header)}")
                yield row
    except OSError as err:
        raise InputError(err.strerror or str(err), source=source) from None
    except (UnicodeDecodeError, csv.Error) as err:
        raise InputError(f"not a CSV file: {err}", source=source) from None


def _shown(text: str) -> str:
    return f'"{text}"' if text else "nothing"
