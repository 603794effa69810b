"""Logging of the served gateway: the project's loggers (``xreg.*``) and uvicorn's, configured
together from the settings (``XREG_LOG_LEVEL``, ``XREG_LOG_FORMAT``).

:func:`logging_config` is a :func:`logging.config.dictConfig` dictionary; ``serve`` hands it to
uvicorn (``log_config=``), which applies it before the application starts, so the gateway's
own messages (start-up, retention, remote registries, authentication failures, one line per
request from ``xreg.access``) reach the same stream as uvicorn's, at the configured level.

Format: ``json`` writes one JSON object per line (:class:`JsonFormatter`: time, level, logger,
message, the id of the request being served, and a request line's fields); ``text`` the
classic plain line; ``auto`` (the default) JSON unless standard error is a terminal.

Log lines never carry credentials: the store URL is logged through :func:`redact_url`, and
every line passes :func:`redact` (bearer and basic credentials, passwords in URLs) on its way
out, whatever logged it.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from gateway.request_context import current_request_id

#: The root of the project's loggers (``xreg.gateway``, ``xreg.http``, ``xreg.remote``, …).
PROJECT_LOGGER = "xreg"
LEVELS = ("debug", "info", "warning", "error", "critical")
FORMATS = ("json", "text", "auto")
FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"

_CREDENTIALS = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=\-]+", re.IGNORECASE)
_URL_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s:@]*:[^/\s@]*@")


def redact(text: str) -> str:
    """``text`` with bearer / basic credentials and URL passwords replaced by ``[redacted]``."""
    if "://" in text:
        text = _URL_USERINFO.sub(r"\1[redacted]@", text)
    return _CREDENTIALS.sub(r"\1 [redacted]", text)


class TextFormatter(logging.Formatter):
    """The plain line format, redacted."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time`` (UTC, RFC 3339), ``level``, ``logger``, ``message``,
    ``request_id`` (while a request is served), the fields a request line carries (the
    ``fields`` attribute of the record) and ``exception``; redacted like :class:`TextFormatter`."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = current_request_id()
        if request_id is not None:
            entry["request_id"] = request_id
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        return redact(json.dumps(entry, ensure_ascii=False, default=str))


def resolved_format(log_format: str = "auto") -> str:
    """``json`` or ``text``: ``auto`` is text when standard error is a terminal, else JSON."""
    if log_format == "auto":
        return "text" if sys.stderr.isatty() else "json"
    return log_format


def logging_config(level: str = "info", log_format: str = "auto") -> dict[str, Any]:
    """One configuration for ``xreg.*`` and uvicorn's loggers, all at ``level``, on stderr, in
    ``log_format`` (``json``, ``text`` or ``auto``)."""
    name = level.upper()
    chosen = resolved_format(log_format)
    handler = {"class": "logging.StreamHandler", "formatter": chosen, "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"text": {"()": TextFormatter, "format": FORMAT}, "json": {"()": JsonFormatter}},
        "handlers": {"stderr": handler},
        "loggers": {
            PROJECT_LOGGER: {"handlers": ["stderr"], "level": name, "propagate": False},
            "uvicorn": {"handlers": ["stderr"], "level": name, "propagate": False},
            "uvicorn.error": {"level": name},
            "uvicorn.access": {"handlers": ["stderr"], "level": name, "propagate": False},
        },
    }


def redact_url(url: str) -> str:
    """``url`` without its user name, password and query (where credentials and tokens go)."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return f"{parts.scheme}://{host}{parts.path}" if parts.scheme else parts.path
