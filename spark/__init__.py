"""PySpark data source ``xregistry``: definition snapshots and change feeds from the gateway.

``spark.register(session)`` is the one call a job makes (importing the package has no side
effect)::

    import spark as xreg
    xreg.register(session)
    session.read.format("xregistry").option("url", "http://host:8080/graphql").option("entity", "messages").load()

Only :mod:`spark.source` and :mod:`spark.snapshot` need PySpark; :mod:`spark.client` needs httpx.
"""

from __future__ import annotations

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
