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

Importing the package lets the Python workers of a session not yet started run this interpreter
(see :mod:`pyspark_xregistry.session`), so a job run as ``venv/bin/python job.py`` needs no
activated environment; :func:`build_session` builds a session for reading the gateway.
"""

from __future__ import annotations

from pyspark_xregistry.session import PUSHDOWN_CONF, build_session, default_worker_python, register
from pyspark_xregistry.source import FilteringDataSource, XRegistryDataSource

#: What PySpark registers automatically under the name ``xregistry``.
DefaultSource = XRegistryDataSource

__all__ = ["PUSHDOWN_CONF", "DefaultSource", "FilteringDataSource", "XRegistryDataSource", "build_session",
           "register"]


default_worker_python()
