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
