"""cdc.progress_bar: plain lines when not a TTY, a rich bar in a TTY, silent when off."""

import io

from cdc.progress_bar import progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_when_not_a_tty(monkeypatch):
    monkeypatch.delenv("CDC_PROGRESS", raising=False)
    out = io.StringIO()
    with progress(10, "copy rows", stream=out, interval_s=0.0) as bar:
        bar.advance(4)
        bar.advance(6)
    lines = out.getvalue().splitlines()
    assert lines, "no progress line printed"
    assert lines[-1].startswith("copy rows: 10/10 (100.0%)")


def test_final_line_even_with_long_interval_and_unknown_total(monkeypatch):
    monkeypatch.delenv("CDC_PROGRESS", raising=False)
    out = io.StringIO()
    with progress(None, "scan", stream=out, interval_s=3600) as bar:
        for _ in range(5):
            bar.advance()
    assert out.getvalue().splitlines() == [out.getvalue().splitlines()[-1]]
    assert out.getvalue().startswith("scan: 5 ")


def test_rich_bar_in_a_tty(monkeypatch):
    monkeypatch.delenv("CDC_PROGRESS", raising=False)
    out = _Tty()
    with progress(3, "snapshot t1", stream=out) as bar:
        bar.advance(3)
    assert "snapshot t1" in out.getvalue()
    assert "3/3" in out.getvalue()


def test_off(monkeypatch):
    monkeypatch.setenv("CDC_PROGRESS", "off")
    out = io.StringIO()
    with progress(3, "quiet", stream=out) as bar:
        bar.advance(3)
    assert out.getvalue() == ""
    assert bar.completed == 3


def test_plain_lines_carry_the_percentage_and_an_eta(monkeypatch):
    monkeypatch.delenv("CDC_PROGRESS", raising=False)
    out = io.StringIO()
    with progress(1000, "snapshot shop", stream=out, interval_s=0.0) as bar:
        bar.started -= 10.0  # 10 s in
        bar.advance(250)  # 25/s: 750 left -> 30 s
    first = out.getvalue().splitlines()[0]
    assert first.startswith("snapshot shop: 250/1000 (25.0%) 25/s elapsed 10.0s eta 30s"), first


def test_with_a_logger_the_lines_go_to_the_log_even_on_a_tty_or_with_progress_off(monkeypatch, caplog):
    import logging

    monkeypatch.setenv("CDC_PROGRESS", "off")  # a terminal setting: log lines are logging's to filter
    out = _Tty()
    log = logging.getLogger("cdc.test.progress")
    with caplog.at_level("INFO", logger=log.name), progress(4, "snapshot shop", stream=out, interval_s=0.0,
                                                            log=log) as bar:
        bar.advance(2)
        bar.advance(2)
    assert out.getvalue() == ""
    assert [r.getMessage().split(" ")[2] for r in caplog.records] == ["2/4", "4/4", "4/4"]


def test_piped_output_has_periodic_lines_and_no_bar_fragments():
    import os
    import subprocess
    import sys

    code = ("import time\nfrom cdc.progress_bar import progress\n"
            "with progress(40, 'copy rows', interval_s=0.05) as bar:\n"
            "    for _ in range(40):\n        time.sleep(0.01)\n        bar.advance()\n")
    env = {k: v for k, v in os.environ.items() if k != "CDC_PROGRESS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env,
                          check=True)
    lines = done.stderr.splitlines()
    assert len(lines) >= 3 and lines[-1].startswith("copy rows: 40/40 (100.0%)"), done.stderr
    assert "\r" not in done.stderr and "\x1b" not in done.stderr and done.stdout == ""
    assert any("%) " in line and " eta " in line for line in lines[:-1]), lines
