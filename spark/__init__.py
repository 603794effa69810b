"""PySpark data source ``xregistry``: definition snapshots and change feeds from the gateway.

``spark.register(session)`` is the one call a job makes (importing this package while a
SparkSession is active registers with it too)::

    import spark as xreg
    xreg.register(session)
    session.read.format("xregistry").option("url", "http://host:8080/graphql").option("entity", "messages").load()

Only :mod:`spark.source` and :mod:`spark.snapshot` need PySpark; :mod:`spark.client` needs httpx.
"""

from __future__ import annotations

import sys
from typing import Any

#: The Spark setting that lets Python data sources take pushed filters (off by default).
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(session: Any = None) -> None:
    """Register the ``xregistry`` format with ``session`` (default: the active SparkSession)
    and switch on filter pushdown for Python data sources, which the source relies on."""
    from pyspark.sql import SparkSession

    from spark.source import XRegistryDataSource

    session = session or SparkSession.getActiveSession()
    if session is None:
        raise RuntimeError("no active SparkSession to register the xregistry data source with")
    session.conf.set(PUSHDOWN_CONF, "true")
    session.dataSource.register(XRegistryDataSource)


def _register_with_active_session() -> None:
    """Best effort on import: only where PySpark is loaded and a driver session is active."""
    if "pyspark.sql" not in sys.modules:
        return
    try:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
    except Exception:
        return
    if session is not None:
        register(session)


_register_with_active_session()
