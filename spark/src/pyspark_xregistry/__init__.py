"""PySpark data source ``xregistry``: definition snapshots and change feeds from an xRegistry
GraphQL gateway.

Installed, the package is found by PySpark 4 on its own (an importable ``pyspark_*`` module with
a ``DefaultSource``), so a job needs no code to read it::

    session.read.format("xregistry").option("url", "http://host:8080/graphql").option("entity", "messages").load()

That source leaves every filter to Spark. :func:`register` swaps in the same source with filter
pushdown (``=`` and ``IN`` on a few columns go to the gateway) and switches on the Spark setting
that pushdown needs, ``spark.sql.python.filterPushdown.enabled``::

    import pyspark_xregistry
    pyspark_xregistry.register(session)
"""

from __future__ import annotations

from typing import Any

from pyspark_xregistry.source import FilteringDataSource, XRegistryDataSource

#: What PySpark registers automatically under the name ``xregistry``.
DefaultSource = XRegistryDataSource

#: The Spark setting that lets Python data sources take pushed filters (off by default).
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

__all__ = ["PUSHDOWN_CONF", "DefaultSource", "FilteringDataSource", "XRegistryDataSource", "register"]


def register(session: Any = None) -> None:
    """Register the ``xregistry`` format with filter pushdown in ``session`` (default: the active
    SparkSession) and switch pushdown for Python data sources on."""
    from pyspark.sql import SparkSession

    session = session or SparkSession.getActiveSession()
    if session is None:
        raise RuntimeError("no active SparkSession to register the xregistry data source with")
    session.conf.set(PUSHDOWN_CONF, "true")
    session.dataSource.register(FilteringDataSource)
