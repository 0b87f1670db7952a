"""`make demo` (`cdc dev demo`) with its output piped, as CI and log files see it (#17): progress
comes as periodic plain lines with percentage and ETA, never as a redrawn bar."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.slow]

CDC = str(Path(sys.executable).with_name("cdc"))


def test_the_demo_piped_prints_progress_lines_and_no_bar_fragments(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CDC_PROGRESS"}
    done = subprocess.run([CDC, "dev", "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
                          check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "\r" not in out and "\x1b" not in out
    workload = [line for line in done.stdout.splitlines() if line.startswith("workload ms")]
    assert len(workload) >= 2 and re.search(r"\(100\.0%\) ", workload[-1]), out[-4000:]
    assert any(re.search(r"\(\d+\.\d%\) .* eta \d+", line) for line in workload), workload
    stream = [line for line in done.stdout.splitlines() if line.startswith("committed transactions in the stream")]
    assert stream and re.search(r": (\d+)/\1 \(100\.0%\)", stream[-1]), stream
