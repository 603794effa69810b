"""The connector as a data team installs it: a fresh virtual environment holding only PySpark,
PyArrow and the connector (installed from spark/, with its own dependencies), run from a working
directory that has an unrelated ``spark/`` package of its own, against the live gateway."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.corpus import REPO
from tests.spark.conftest import CORPUS_COUNTS, REGISTRY_ID

pytestmark = pytest.mark.venv

#: A job that relies on PySpark finding the installed connector: no import of it, no register().
JOB = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    session = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .getOrCreate())
    df = (session.read.format("xregistry").option("url", sys.argv[1]).option("token", sys.argv[2])
          .option("entity", "messagegroups").load())
    found = {"rows": df.count(), "ais": [r.xid for r in df.filter(df.id == "IO.AISstream").collect()],
             "registries": sorted(r.registry for r in df.select("registry").distinct().collect())}
    session.stop()
    import importlib.util
    found["server_modules"] = [m for m in ("gateway", "uvicorn", "strawberry", "pymongo")
                               if importlib.util.find_spec(m) is not None]
    import pyspark_xregistry
    found["connector"] = pyspark_xregistry.__file__
    print("RESULT " + json.dumps(found))
""")


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_a_fresh_environment_reads_the_gateway_after_pip_install(gateway, tmp_path):
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, env)
    python = str(venv / "bin" / "python")
    # a copy: building the connector leaves build/ and *.egg-info behind in its folder
    connector = shutil.copytree(REPO / "spark", tmp_path / "connector",
                                ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    # what a data team types; the lock only keeps the versions those of this repository
    _run([python, "-m", "pip", "install", "--quiet", "-c", str(REPO / "requirements.lock"),
          "pyspark", "pyarrow", str(connector)], tmp_path, env)
    installed = {line.split("==")[0].lower() for line in
                 _run([python, "-m", "pip", "freeze", "--all"], tmp_path, env).split()}
    assert {"pyspark", "pyarrow", "httpx", "pyspark-xregistry"} <= installed
    assert not installed & {"xreg-gateway", "uvicorn", "strawberry-graphql", "starlette", "pymongo", "aiocache"}

    work = tmp_path / "work"  # a data project with a spark/ package of its own
    (work / "spark").mkdir(parents=True)
    (work / "spark" / "__init__.py").write_text('"""The team\'s own Spark helpers."""\nOWNER = "data team"\n')
    (work / "job.py").write_text(JOB)
    env |= {"PYSPARK_PYTHON": python, "SPARK_LOCAL_IP": "127.0.0.1"}
    out = _run([python, "job.py", gateway.url, gateway.token], work, env)
    found = json.loads(out.split("RESULT ", 1)[1])
    assert found["rows"] == gateway.total("messagegroups", gateway.revision()) >= CORPUS_COUNTS["messagegroups"]
    assert found["ais"] == ["/messagegroups/IO.AISstream"] and found["registries"] == [REGISTRY_ID]
    assert found["server_modules"] == [] and found["connector"].startswith(str(venv))

    # the snapshot job, as a module of the installed connector, from the same directory
    out = _run([python, "-m", "pyspark_xregistry.snapshot", "--url", gateway.url, "--out", str(work / "snap"),
                "--entity", "endpoints", "--master", "local[1]"], work, env | {"XREG_GATEWAY_TOKEN": gateway.token})
    manifest = json.loads((work / "snap" / "manifest.json").read_text())
    assert "snapshot written" in out
    assert manifest["entities"]["endpoints"]["rows"][REGISTRY_ID] == CORPUS_COUNTS["endpoints"]
