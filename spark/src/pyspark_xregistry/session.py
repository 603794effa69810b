"""Spark sessions for the connector: which interpreter PySpark's Python workers run, the
registration of the source with filter pushdown, and a session built for reading the gateway.

PySpark starts its Python workers with the interpreter named by the environment variable
``PYSPARK_PYTHON`` as it is when the session starts (``spark.pyspark.python`` only sets that
variable when ``spark-submit`` starts the driver); without it, ``python3`` from ``PATH`` — which
is not the virtual environment's interpreter when a job runs as ``venv/bin/python job.py``
without activating it, so the workers cannot import the connector. Importing the package makes
this interpreter the default for a session not yet started (:func:`default_worker_python`);
:func:`check_worker_python` refuses, at once, a local session whose workers cannot import it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from pyspark_xregistry.source import FilteringDataSource

#: The environment variable naming the interpreter of PySpark's Python workers.
WORKER_PYTHON_ENV = "PYSPARK_PYTHON"
#: The Spark setting that lets Python data sources take pushed filters (off by default).
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
#: The session setting that records :func:`register` was called (a second call does nothing).
REGISTERED_CONF = "spark.xregistry.registered"
#: The Spark logger that warns when a registration replaces the source Spark found by itself.
_REPLACING_LOGGER = "org.apache.spark.sql.execution.datasources.DataSourceManager"


def default_worker_python() -> None:
    """Let the Python workers of a session not yet started run this interpreter (whose environment
    holds the connector), unless ``PYSPARK_PYTHON`` names another one."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is None:
        os.environ.setdefault(WORKER_PYTHON_ENV, sys.executable)


def check_worker_python(session: Any) -> None:
    """Raise ``RuntimeError`` naming the setting to add when the Python workers of a local session
    run an interpreter that cannot import the connector (a cluster's workers, and a session
    shipping code with ``--py-files``, are left to their own configuration)."""
    context = session.sparkContext
    worker = context.pythonExec
    if (worker == sys.executable or not context.master.startswith("local")
            or context.getConf().get("spark.submit.pyFiles")):
        return
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('pyspark_xregistry') is None)"
    try:
        found = subprocess.run([worker, "-c", probe], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        found = False
    if not found:
        raise RuntimeError(
            f"PySpark's Python workers run {worker!r}, which cannot import pyspark_xregistry. Start the "
            f"SparkSession with the environment variable {WORKER_PYTHON_ENV}={sys.executable} (in the job: "
            f"os.environ[{WORKER_PYTHON_ENV!r}] = sys.executable before the session is built; importing "
            f"pyspark_xregistry first does that when {WORKER_PYTHON_ENV} is unset).")


def build_session(master: str = "local[2]", driver_memory: str = "1g") -> Any:
    """A SparkSession for reading the gateway (or the active one), with the data source registered.
    A local master stays on the loopback interface; Python workers run this interpreter and are
    not reused: a worker whose output Spark stops reading early (``show()``, ``limit``) is ended
    by Spark instead of failing on its next write to the closed connection."""
    os.environ.setdefault(WORKER_PYTHON_ENV, sys.executable)
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName("xregistry")
               .config("spark.driver.memory", driver_memory).config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.pyspark.python", sys.executable).config("spark.python.worker.reuse", "false"))
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    session = builder.getOrCreate()
    register(session)
    return session


def register(session: Any = None) -> None:
    """Register the ``xregistry`` format with filter pushdown in ``session`` (default: the active
    SparkSession) and switch pushdown for Python data sources on; once per session, a second call
    does nothing. Raises ``RuntimeError`` naming the setting to add when the session's Python
    workers cannot import the connector."""
    from pyspark.sql import SparkSession

    session = session or SparkSession.getActiveSession()
    if session is None:
        raise RuntimeError("no active SparkSession to register the xregistry data source with")
    if session.conf.get(REGISTERED_CONF, "false") == "true":
        return
    check_worker_python(session)
    session.conf.set(PUSHDOWN_CONF, "true")
    with _logger_quiet(session, _REPLACING_LOGGER):  # replacing the source Spark found is intended
        session.dataSource.register(FilteringDataSource)
    session.conf.set(REGISTERED_CONF, "true")


@contextlib.contextmanager
def _logger_quiet(session: Any, name: str) -> Iterator[None]:
    """Spark's logger ``name`` at ERROR for the block (log4j 2's ``Configurator``), then as before."""
    jvm = session.sparkContext._jvm
    log4j = jvm.org.apache.logging.log4j
    before = log4j.LogManager.getLogger(name).getLevel()
    log4j.core.config.Configurator.setLevel(name, log4j.Level.ERROR)
    try:
        yield
    finally:
        log4j.core.config.Configurator.setLevel(name, before)
