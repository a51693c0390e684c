"""The human view of a replay: what happened over time, in a few tables and one summary line."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.simulate.replay.model import ReplayReport, ReplaySummary
from kubesched.simulate.snapshot.table import workload_table

#: Pods still pending at the end are listed, up to this many.
PENDING_ROWS = 20
REASON_WIDTH = 110
_BARS = " ▁▂▃▄▅▆▇█"


def render_replay_table(report: ReplayReport, console: Console) -> None:
    s = report.summary
    overview = Table(
        title=f"Replay of {s.scenario or 'the scenario'}", header_style="bold", show_header=False
    )
    overview.add_column("figure")
    overview.add_column("value")
    lat = s.latency
    rows = [
        ("virtual time", _duration(s.virtual_seconds)),
        ("timeline events", f"{s.events}"),
        ("pods", f"{s.pods} ({s.scheduled} bound, {s.pending} pending at the end, {s.completed} completed)"),
        ("evictions", _evictions(s)),
        (
            "wait until bound",
            "no pod bound"
            if lat.count == 0
            else f"p50 {_duration(lat.p50)}, p90 {_duration(lat.p90)}, p99 {_duration(lat.p99)}, "
            f"max {_duration(lat.max)}",
        ),
    ]
    rows += [
        (f"{resource} utilization", f"mean {s.utilization_mean[resource]:.0%}, peak {peak:.0%}")
        for resource, peak in s.utilization_peak.items()
    ]
    pending = [sample.pending for sample in report.timeline]
    if pending:
        rows.append(("pending over time", f"{_sparkline(pending)} (max {max(pending)})"))
    gpu = report.gpu
    if gpu is not None:
        shares = (
            f"arrived requests {gpu.arrived_percent}%, unallocated {gpu.unallocated_percent}%, "
            f"fragmented {gpu.fragmented_percent}%"
        )
        rows.append(("GPUs", f"{gpu.gpus}; {shares}"))
    rows += [(f"skipped: {reason}", str(n)) for reason, n in s.skipped_events.items()]
    for name, value in rows:
        overview.add_row(name, escape(value))
    console.print(overview)

    left = [p for p in report.pods if p.ended is None and p.result not in ("Scheduled", "Ignored")]
    if left:
        table = Table(title=f"Pods pending at the end ({len(left)})", header_style="bold")
        for column in ("POD", "RESULT", "WAITING SINCE", "REASON"):
            table.add_column(column, overflow="fold" if column == "REASON" else "ellipsis")
        for p in left[:PENDING_ROWS]:
            reason = p.message or ""
            if len(reason) > REASON_WIDTH:
                reason = reason[: REASON_WIDTH - 3] + "..."
            table.add_row(
                escape(f"{p.namespace}/{p.name}"), p.result, _duration(p.created_at), escape(reason)
            )
        console.print(table)
        if len(left) > PENDING_ROWS:
            console.print(f"... and {len(left) - PENDING_ROWS} more (see --output json)")
    if report.workloads:
        console.print(workload_table(report.workloads, title="Workloads at the end"))
    console.print(
        f"[bold]{s.scheduled}/{s.pods}[/] pods bound over {_duration(s.virtual_seconds)} of virtual time; "
        f"{s.events} events replayed in {s.seconds:.2f}s ({s.events_per_second:g} events/s)"
    )


def _duration(seconds: float | None) -> str:
    """`95.5` -> `1m35.5s`; short and exact enough for a table."""
    if seconds is None:
        return "-"
    whole_minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(whole_minutes), 60)
    secs = f"{rest:.3f}".rstrip("0").rstrip(".")
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def _sparkline(values: list[int], width: int = 60) -> str:
    """A one-line chart: the max of each of `width` buckets, scaled to the highest value."""
    if len(values) > width:
        step = len(values) / width
        values = [
            max(values[int(i * step) : max(int((i + 1) * step), int(i * step) + 1)]) for i in range(width)
        ]
    top = max(values) or 1
    return "".join(_BARS[round(v / top * (len(_BARS) - 1))] for v in values)


def _evictions(s: ReplaySummary) -> str:
    """Evictions by reason, and how many evicted pods their controllers replaced."""
    text = ", ".join(f"{n} {r}" for r, n in s.evictions.items()) or "0"
    return f"{text} ({s.recreated} recreated by their controllers)" if s.recreated else text
