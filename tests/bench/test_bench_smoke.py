"""Every script in ``bench/`` runs at its smoke size (``--smoke``: the smallest run through all its
sections, the measured side and the baseline) and ends with its summary line: ``summary:`` and
at least one ratio written ``N×``. The scripts are found by glob, so a new one is covered
without a change here; each runs as a subprocess with this interpreter, from a temporary
directory. ``bench_spark.py`` needs PySpark: it is skipped where the Spark tests are
(``pytest.importorskip("pyspark")``, as ``tests/spark/conftest.py``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(BENCH.glob("*.py"))
#: The last line every script prints: its figures as ratios.
SUMMARY = re.compile(r"^summary: .*\d×")
#: What a script needs beyond the gateway's own dependencies, by script.
NEEDS = {"bench_spark.py": "pyspark"}
#: A guard against a hung script, not a measure: a smoke run takes seconds.
HUNG = 900


def test_scripts_are_found() -> None:
    assert {"bench_federation.py", "bench_graphql.py", "stall_trace.py"} <= {s.name for s in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_smoke_run_prints_its_summary(script: Path, tmp_path: Path) -> None:
    if script.name in NEEDS:
        pytest.importorskip(NEEDS[script.name])
    done = subprocess.run([sys.executable, str(script), "--smoke"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=HUNG)
    assert done.returncode == 0, f"{script.name} exited {done.returncode}:\n{done.stderr[-4000:]}"
    lines = done.stdout.strip().splitlines()
    assert lines and SUMMARY.match(lines[-1]), f"{script.name} printed no summary line last:\n{done.stdout[-2000:]}"
