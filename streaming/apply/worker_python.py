"""The interpreter a local job's Python workers run: this one, importing pyspark byte-compiled.

Spark starts every Python worker (the executors' ``pyspark.daemon``, the streaming source's runner, the data
source planners) with ``$SPARK_HOME/python/lib/pyspark.zip`` first on ``PYTHONPATH``. Python cannot keep
byte code for modules it imports from a zip file, so each of those processes compiled pyspark from source
again: about 0.4 s of CPU per worker, eight to ten workers per job start. With the pip-installed pyspark
(``SPARK_HOME`` is the installed package itself) the same files are importable from site-packages, where
they are byte-compiled once; :func:`launcher` writes a short shell script that drops those zip files from
``PYTHONPATH`` and runs this interpreter, for ``PYSPARK_PYTHON``.

Only for a local master, where the JVM and the workers share this installation: a cluster's executors take
pyspark from their own ``SPARK_HOME`` as Spark sets it up. Nothing changes when ``PYSPARK_PYTHON`` is
set already, when this interpreter's pyspark is not the one ``SPARK_HOME`` names, or when the script cannot
run where it was written (a temp directory mounted ``noexec``, as Docker's ``--tmpfs`` mounts it).
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_SCRIPT = """#!/bin/sh
# cdc apply: Spark's Python workers import pyspark byte-compiled from {home} (streaming/apply/worker_python.py)
set -f
kept=
IFS=:
for entry in $PYTHONPATH; do
  case $entry in {zip}|{py4j}) ;; *) kept=${{kept:+$kept:}}$entry ;; esac
done
unset IFS
set +f
PYTHONPATH=$kept exec {python} "$@"
"""


def launcher(spark_home: str | None = None) -> str | None:
    """The path of the script for ``PYSPARK_PYTHON`` (in a private temp directory removed at exit), or None
    when this interpreter's pyspark is not ``spark_home``'s (default: where pyspark finds its home) or the
    script does not run where it was written."""
    try:
        import pyspark
        from pyspark.find_spark_home import _find_spark_home
    except ImportError:
        return None
    home = Path(spark_home or _find_spark_home()).resolve()
    if home != Path(pyspark.__file__).resolve().parent:
        return None  # a separate Spark installation: its zip is its pyspark
    lib = home / "python" / "lib"
    zips = sorted(lib.glob("py4j-*-src.zip"))
    if not (lib / "pyspark.zip").is_file() or len(zips) != 1:
        return None
    where = Path(tempfile.mkdtemp(prefix="cdc-pyworker-"))
    script = where / "python"
    script.write_text(_SCRIPT.format(home=home, zip=shlex.quote(str(lib / "pyspark.zip")),
                                     py4j=shlex.quote(str(zips[0])), python=shlex.quote(sys.executable)))
    script.chmod(0o700)
    try:  # a temp directory mounted noexec (Docker's --tmpfs) cannot run it: the workers then run this interpreter
        subprocess.run([str(script), "-c", "pass"], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        shutil.rmtree(where, True)
        return None
    atexit.register(shutil.rmtree, where, True)
    return str(script)


def use_for_local_workers() -> None:
    """Point ``PYSPARK_PYTHON`` at :func:`launcher`'s script, or at this interpreter when there is none;
    a ``PYSPARK_PYTHON`` set already is kept."""
    if "PYSPARK_PYTHON" in os.environ:
        return
    os.environ["PYSPARK_PYTHON"] = launcher() or sys.executable
