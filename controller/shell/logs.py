"""The controller's log lines: plain text (the default) or one JSON object per line.

    setup_logging("INFO", "json", role=role)    # root handler on stderr
    log.info("moved", extra={"topic": "t", "partition": 0, "reassignment_id": 42})

A JSON line holds ``time`` (UTC, ISO 8601, milliseconds), ``level``, ``logger``, ``message``,
then the record's fields: whatever a call passed in ``extra`` (``topic``, ``partition``,
``reassignment_id``, ``client``, ...), and on every line of a controller process its
``controller_id`` and, while it is active, its ``epoch``; ``exception`` holds a traceback.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Attributes every LogRecord has: anything else on a record came from ``extra`` or a filter.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, separators=(",", ":"))


class RoleFilter(logging.Filter):
    """Stamps each record with the controller id and, while active, the epoch."""

    def __init__(self, role):
        super().__init__()
        self.role = role

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "controller_id"):
            record.controller_id = self.role.controller_id
        active = self.role.active
        if active is not None and not hasattr(record, "epoch"):
            record.epoch = active.epoch
        return True


def formatter(log_format: str) -> logging.Formatter:
    return JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)


def setup_logging(level: str, log_format: str, *, role=None, stream=None) -> logging.Handler:
    """One handler on the root logger (replacing earlier ones), in ``log_format``."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter(log_format))
    if role is not None:
        handler.addFilter(RoleFilter(role))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler
