"""streaming.apply.worker_python: a local job's Python workers run this interpreter without pyspark's zip files on
PYTHONPATH (so they import pyspark byte-compiled), everything else on it kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark

from streaming.apply import worker_python

HOME = Path(pyspark.__file__).resolve().parent
LIB = HOME / "python" / "lib"


def _run(script: str, pythonpath: str) -> tuple[str, str]:
    code = "import os, pyspark; print(os.environ['PYTHONPATH']); print(pyspark.__file__)"
    out = subprocess.run([script, "-c", code], env={**os.environ, "PYTHONPATH": pythonpath},
                         capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    return out[0], out[1]


def test_the_zips_leave_pythonpath_the_rest_stays_in_order(tmp_path):
    script = worker_python.launcher()
    assert script is not None, "the pip-installed pyspark ships python/lib/pyspark.zip"
    py4j = next(LIB.glob("py4j-*-src.zip"))
    odd = tmp_path / "a dir with spaces and a *"
    path = os.pathsep.join([str(LIB / "pyspark.zip"), str(py4j), str(odd), "/x/y"])
    kept, imported = _run(script, path)
    assert kept == os.pathsep.join([str(odd), "/x/y"])
    assert Path(imported).resolve().parent == HOME  # the installed package, byte-compiled in site-packages
    assert _run(script, "")[0] == ""


def test_runs_this_interpreter():
    script = worker_python.launcher()
    assert script is not None
    out = subprocess.run([script, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True,
                         timeout=60, check=True).stdout.strip()
    assert Path(out).resolve() == Path(sys.executable).resolve()


def test_another_spark_home_keeps_its_zip(tmp_path):
    (tmp_path / "python" / "lib").mkdir(parents=True)
    (tmp_path / "python" / "lib" / "pyspark.zip").write_bytes(b"")
    assert worker_python.launcher(str(tmp_path)) is None


def test_a_pyspark_python_set_already_is_kept(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/python/bin/python3")
    worker_python.use_for_local_workers()
    assert os.environ["PYSPARK_PYTHON"] == "/opt/python/bin/python3"
    monkeypatch.delenv("PYSPARK_PYTHON")
    worker_python.use_for_local_workers()
    script = Path(os.environ["PYSPARK_PYTHON"])
    assert script.name == "python" and script.parent.name.startswith("cdc-pyworker-")
    assert sys.executable in script.read_text()


def test_a_temp_directory_that_cannot_run_it_leaves_this_interpreter(tmp_path, monkeypatch):
    """Docker's --tmpfs mounts /tmp noexec: the script is written there but cannot run; the workers then run this
    interpreter (PYSPARK_PYTHON as before), and nothing is left behind."""
    real_run = subprocess.run

    def noexec(args, *a, **kw):
        if str(args[0]).startswith(str(tmp_path)):
            raise PermissionError(13, "Permission denied", str(args[0]))
        return real_run(args, *a, **kw)

    monkeypatch.setattr(worker_python.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(worker_python.subprocess, "run", noexec)
    assert worker_python.launcher() is None
    assert list(tmp_path.iterdir()) == []
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    worker_python.use_for_local_workers()
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
