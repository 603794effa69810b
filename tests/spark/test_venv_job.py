"""A job run with a virtual environment's interpreter, the environment not activated
(``<venv>/bin/python job.py``: its ``bin`` not on ``PATH``, no ``PYSPARK_PYTHON``), as a data
engineer starts one: the connector makes PySpark's workers run that interpreter, ``show()`` leaves
no worker tracebacks, ``register()`` replaces the source Spark found without a warning and a second
call does nothing; a session whose workers cannot import the connector is refused at once, with
the setting to add."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.spark.conftest import CORPUS_COUNTS

JOB = textwrap.dedent("""
    import json, os, sys
    import pyspark_xregistry

    found = {"worker_python": os.environ.get("PYSPARK_PYTHON")}
    spark = pyspark_xregistry.build_session("local[2]")
    pyspark_xregistry.register(spark)  # a second time: nothing happens

    def read(entity):
        return (spark.read.format("xregistry").option("url", sys.argv[1]).option("token", sys.argv[2])
                .option("entity", entity).load())

    messages = read("messages")
    messages.show()  # reads fewer rows than the partition holds
    found["messages"] = messages.count()
    found["endpoints"] = read("endpoints").count()
    found["kafka"] = messages.filter(messages.protocol == "KAFKA").count() > 0
    spark.stop()

    # a session started with workers that cannot import the connector (the bare interpreter)
    os.environ["PYSPARK_PYTHON"] = sys._base_executable
    from pyspark.sql import SparkSession
    bare = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    try:
        pyspark_xregistry.register(bare)
    except RuntimeError as exc:
        found["refused"] = str(exc)
    bare.stop()
    print("RESULT " + json.dumps(found))
""")


def test_a_job_runs_from_a_venv_that_is_not_activated(gateway, tmp_path: Path):
    python = Path(sys.prefix) / "bin" / "python"  # the environment the connector is installed in
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p).resolve() != python.parent.resolve())
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env |= {"PATH": path, "SPARK_LOCAL_IP": "127.0.0.1"}
    (tmp_path / "job.py").write_text(JOB)
    done = subprocess.run([str(python), "job.py", gateway.url, gateway.token], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert found["worker_python"] == str(python)
    assert found["messages"] == gateway.total("messages", gateway.revision()) >= CORPUS_COUNTS["messages"]
    assert found["endpoints"] == gateway.total("endpoints", gateway.revision()) >= CORPUS_COUNTS["endpoints"]
    assert found["kafka"]
    assert f"PYSPARK_PYTHON={python}" in found["refused"] and sys.base_prefix in found["refused"]
    for unwanted in ("Traceback", "BrokenPipeError", "replaced"):
        assert unwanted not in done.stderr, done.stderr[-3000:]
