"""The status page (``GET /status``): one HTML page, no script, no external resource.

It shows each source (state, position, lag, the stream's tail, the last error and the way back: the CLI
command and the API call), each apply item (progress row, last batch, records behind, dead letters), and
a lag chart per source drawn as inline SVG from :class:`LagHistory`, the lag the API sampled in memory
(lost at a restart: Prometheus keeps the long history, cdc_source_lag_seconds).
"""

from __future__ import annotations

import html
import threading
import time
from collections import deque
from typing import Any

HISTORY_POINTS = 360  # at SAMPLE_S: the last 30 minutes
SAMPLE_S = 5.0


class LagHistory:
    """The last ``points`` lag samples (monotonic-free wall time in seconds, lag in seconds) per source.
    Written by the API's sampler thread and by page renders; read by renders (one lock)."""

    def __init__(self, points: int = HISTORY_POINTS) -> None:
        self.points = points
        self._lock = threading.Lock()
        self._series: dict[str, deque[tuple[float, float]]] = {}

    def add(self, source: str, lag_s: float | None, at: float | None = None) -> None:
        if lag_s is None:
            return
        with self._lock:
            self._series.setdefault(source, deque(maxlen=self.points)).append((time.time() if at is None else at,
                                                                               float(lag_s)))

    def series(self) -> dict[str, list[tuple[float, float]]]:
        with self._lock:
            return {name: list(points) for name, points in self._series.items()}


_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def lag_chart(series: dict[str, list[tuple[float, float]]], width: int = 640, height: int = 180) -> str:
    """An inline SVG line chart of every series (x: time, y: lag in seconds from 0 to the largest); a text
    line when there are no samples yet."""
    e = html.escape
    points = [p for s in series.values() for p in s]
    if not points:
        return "<p id=\"lag-chart\">no lag samples yet</p>"
    t0, t1 = min(p[0] for p in points), max(p[0] for p in points)
    top = max(1.0, max(p[1] for p in points))
    left, bottom = 50, 20
    w, h = width - left - 10, height - bottom - 10

    def xy(t: float, v: float) -> str:
        x = left + (0 if t1 == t0 else (t - t0) / (t1 - t0) * w)
        return f"{x:.1f},{10 + h - v / top * h:.1f}"

    out = [(f"<svg id=\"lag-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" "
            f"role=\"img\" aria-label=\"lag in seconds per source\">"),
           f"<line x1=\"{left}\" y1=\"{10 + h}\" x2=\"{left + w}\" y2=\"{10 + h}\" stroke=\"#888\"/>",
           f"<line x1=\"{left}\" y1=\"10\" x2=\"{left}\" y2=\"{10 + h}\" stroke=\"#888\"/>",
           f"<text x=\"2\" y=\"16\" font-size=\"11\">{top:.1f}s</text>",
           f"<text x=\"2\" y=\"{10 + h}\" font-size=\"11\">0s</text>",
           f"<text x=\"{left}\" y=\"{height - 4}\" font-size=\"11\">last {max(0.0, t1 - t0):.0f}s</text>"]
    for i, (name, s) in enumerate(sorted(series.items())):
        color = _COLORS[i % len(_COLORS)]
        out.append(f"<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\""
                   f"{' '.join(xy(t, v) for t, v in s)}\"><title>{e(name)}</title></polyline>")
        out.append(f"<text x=\"{left + w - 120}\" y=\"{24 + 14 * i}\" font-size=\"11\" fill=\"{color}\">"
                   f"{e(name)} {s[-1][1]:.1f}s</text>")
    return "".join(out) + "</svg>"


def render(sources: list[dict[str, Any]], apply: list[dict[str, Any]], apply_error: str | None,
           series: dict[str, list[tuple[float, float]]]) -> str:
    """The page (``sources``: the API's Source answers; ``apply``: its Apply answers)."""
    e = html.escape
    rows = []
    for s in sources:
        lag = "" if s["lag_seconds"] is None else f"{s['lag_seconds']:.1f}"
        lag_tx = "" if s.get("lag_transactions") is None else str(s["lag_transactions"])
        state = s["state"] + (f" ({_snapshot(s['snapshot'])})" if s.get("snapshot") else "")
        opened = s.get("open_transactions")
        opened = "" if opened is None else f"{len(opened)}" + (f" (oldest {opened[0]['xid']})" if opened else "")
        back = "<br>".join(f"<code>{e(x)}</code>" for x in s["way_back"])
        rows.append(f"<tr class=\"{e(s['state'].replace(' ', '-'))}\" data-source=\"{e(s['name'])}\">"
                    f"<td>{e(s['name'])}</td><td>{e(s['kind'])}</td><td>{e(state)}</td>"
                    f"<td class=\"position\">{e(_position(s['position']))}</td><td>{lag}</td><td>{lag_tx}</td>"
                    f"<td>{e(opened)}</td>"
                    f"<td>{s['tail']['sequence']}</td><td>{e(s['why'] or '')}</td><td>{back}</td></tr>")
    arows = []
    for a in apply:
        p, b = a.get("progress") or {}, a.get("last_batch") or {}
        lag = "" if a.get("lag_seconds") is None else f"{a['lag_seconds']:.1f}"
        err = a.get("error") or ""
        arows.append(f"<tr class=\"{'failed' if err else 'ok'}\"><td>{e(a['source'])}</td><td>{e(a['target'])}</td>"
                     f"<td>{e(str(p.get('last_sequence', '')))}</td><td>{e(_position(p.get('position')))}</td>"
                     f"<td>{e(str(b.get('batch_id', '')))}</td><td>{e(str(b.get('applied_at') or ''))}</td>"
                     f"<td>{e(str(a.get('records_behind') if a.get('records_behind') is not None else ''))}</td>"
                     f"<td>{lag}</td><td>{e(str(a.get('dead_letters') if a.get('dead_letters') is not None else ''))}"
                     f"</td><td>{e(err)}</td></tr>")
    apply_part = (f"<p class=\"failed\">{e(apply_error)}</p>" if apply_error else
                  "<table id=\"apply\"><tr><th>source</th><th>target</th><th>applied sequence</th><th>position</th>"
                  "<th>last batch</th><th>applied at (UTC)</th><th>records behind</th><th>lag (s)</th>"
                  "<th>dead letters</th><th>error</th></tr>" + "".join(arows) + "</table>" if apply else
                  "<p>no apply items in the config file</p>")
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\"><title>cdc status</title><style>"
            "body{font-family:sans-serif}td,th{border:1px solid #ccc;padding:4px;vertical-align:top}"
            "table{border-collapse:collapse}.failed{background:#fdd}.paused{background:#ffd}</style></head><body>"
            "<h1>cdc status</h1><h2>sources</h2><table id=\"sources\"><tr><th>source</th><th>kind</th><th>state</th>"
            "<th>position</th><th>lag (s)</th><th>lag (transactions)</th><th>open transactions</th>"
            "<th>stream sequence</th><th>why</th><th>way back</th></tr>"
            + "".join(rows) + "</table><h2>lag</h2>" + lag_chart(series) + "<h2>apply</h2>" + apply_part
            + "</body></html>")


def _snapshot(snap: dict[str, Any]) -> str:
    """``initial snapshot of db.t, table 2 of 5`` (or without the count: incremental)."""
    where = f" of {snap['table']}" if snap.get("table") else ""
    count = f", table {snap['tables_done'] + 1} of {snap['tables_total']}" if snap.get("tables_total") else ""
    return f"{snap['kind']} snapshot{where}{count}"


def _position(position: Any) -> str:
    if not isinstance(position, dict):
        return "" if position is None else str(position)
    return ", ".join(f"{k}={v}" for k, v in sorted(position.items()) if not isinstance(v, dict | list))
