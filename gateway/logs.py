"""Logging of the served gateway: the project's loggers (``xreg.*``) and uvicorn's, configured
together from the settings (``XREG_LOG_LEVEL``).

:func:`logging_config` is a :func:`logging.config.dictConfig` dictionary; ``serve`` hands it to
uvicorn (``log_config=``), which applies it before the application starts, so the gateway's
own messages (start-up, retention, remote registries, authentication failures) reach the same
stream as uvicorn's, at the configured level. Log lines never carry credentials: the store URL
is logged through :func:`redact_url`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

#: The root of the project's loggers (``xreg.gateway``, ``xreg.http``, ``xreg.remote``, …).
PROJECT_LOGGER = "xreg"
LEVELS = ("debug", "info", "warning", "error", "critical")
FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def logging_config(level: str = "info") -> dict[str, Any]:
    """One configuration for ``xreg.*`` and uvicorn's loggers, all at ``level``, on stderr."""
    name = level.upper()
    handler = {"class": "logging.StreamHandler", "formatter": "plain", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": FORMAT}},
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
