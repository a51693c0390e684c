"""Log set-up for the long-running commands: text lines or JSON objects on stderr.

A record may carry structured fields in `extra={"fields": {...}}` (the scheduling loop logs one
such line per attempt at debug level). The text format appends them as `key=value`, quoting values
with spaces; the JSON format (`--logging-format json`, as kube-scheduler's flag) writes one object
per line with `ts`, `level`, `logger`, `msg` and the fields, for log pipelines.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

__all__ = ["FORMATS", "configure_logging"]

FORMATS = ("text", "json")
TEXT = "%(asctime)s %(levelname).1s %(name)s: %(message)s"
#: Loggers that trace every HTTP exchange at debug level: a decision per attempt is what debug
#: means here, not wire traces, so they stay at warning.
_WIRE_LOGGERS = ("httpx2", "httpcore2", "httpx", "httpcore", "hpack", "urllib3")


def configure_logging(level: str, fmt: str = "text") -> None:
    """Log `level` and above to stderr in `fmt` (`text` or `json`), replacing earlier handlers."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter(TEXT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper()))
    for name in _WIRE_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = getattr(record, "fields", None)
    return dict(fields) if isinstance(fields, dict) else {}


class TextFormatter(logging.Formatter):
    """`2026-12-01 17:00:00,123 D kubesched.decisions: scheduling attempt pod=ns/p result=...`."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = _fields(record)
        if not fields:
            return line
        extra = " ".join(f"{k}={_text(v)}" for k, v in fields.items())
        head, sep, tail = line.partition("\n")  # keep a traceback after the fields
        return f"{head} {extra}{sep}{tail}"


def _text(value: object) -> str:
    text = str(value)
    return json.dumps(text) if not text or any(c in text for c in ' "=') else text


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts (RFC 3339, UTC), level, logger, msg, fields, exc."""

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        out: dict[str, Any] = {
            "ts": f"{ts}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in _fields(record).items():
            out.setdefault(key, value)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)
