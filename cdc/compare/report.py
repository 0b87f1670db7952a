"""The result of comparing one table, and how it is printed.

A TableReport keeps every differing key (the merge yields only differences,
so this is bounded by how different the tables are, not by their size);
printing shows counts and the first ``sample`` keys of each kind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cdc.compare.merge import DIFFERENT, EXTRA, MISSING, Diff


@dataclass
class TableReport:
    source_table: str
    target_table: str
    key_columns: tuple[str, ...]
    mode: str = "row"  # bucket+row | row | full-row (no primary key)
    source_rows: int = 0
    target_rows: int = 0
    same: int = 0
    rechecked_rows: int = 0  # bucket+row: key-range width sent to the row pass (differing buckets)
    diffs: list[Diff] = field(default_factory=list)
    type_mismatches: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # columns left out: a database cannot render them
    error: str | None = None  # the table could not be compared (cdc compare then exits 2)
    seconds: float = 0.0

    def keys(self, kind: str) -> list[tuple]:
        return [d.key for d in self.diffs if d.kind == kind]

    def count(self, kind: str) -> int:
        if self.mode == "full-row":  # multiset: a diff stands for |source - target| copies
            return sum(abs(int(d.source) - int(d.target)) for d in self.diffs if d.kind == kind)
        return sum(1 for d in self.diffs if d.kind == kind)

    @property
    def equal(self) -> bool:
        return not self.diffs and self.error is None

    def key_text(self, key: tuple) -> str:
        if self.mode == "full-row":
            return f"md5={key[0]}"
        return ", ".join(f"{c}={v!r}" for c, v in zip(self.key_columns, key))

    def to_json(self, sample: int | None = None) -> dict[str, Any]:
        def keys(kind: str) -> list[Any]:
            ks = self.keys(kind)[:sample] if sample else self.keys(kind)
            if self.mode == "full-row":
                return [k[0] for k in ks]
            return [{c: _jsonable(v) for c, v in zip(self.key_columns, k)} for k in ks]

        return {
            "source_table": self.source_table, "target_table": self.target_table, "mode": self.mode,
            "key": list(self.key_columns), "equal": self.equal,
            "source_rows": self.source_rows, "target_rows": self.target_rows, "same": self.same,
            "missing": self.count(MISSING), "extra": self.count(EXTRA), "different": self.count(DIFFERENT),
            "missing_keys": keys(MISSING), "extra_keys": keys(EXTRA), "different_keys": keys(DIFFERENT),
            "type_mismatches": self.type_mismatches, "warnings": self.warnings,
            "unsupported_columns": self.unsupported, "error": self.error,
            "rechecked_rows": self.rechecked_rows, "seconds": round(self.seconds, 3),
        }

    def render(self, sample: int = 10) -> str:
        if self.error is not None:
            return f"{self.source_table} -> {self.target_table}: ERROR {self.error}"
        head = (f"{self.source_table} -> {self.target_table}: "
                + ("EQUAL" if self.equal else
                   f"{self.count(MISSING)} missing, {self.count(EXTRA)} extra, {self.count(DIFFERENT)} different")
                + f" (source {self.source_rows} rows, target {self.target_rows} rows, {self.mode}, "
                  f"{self.seconds:.2f}s)")
        lines = [head]
        lines += [f"  warning: {w}" for w in self.warnings]
        lines += [f"  type mismatch: {m}" for m in self.type_mismatches]
        lines += [f"  unsupported: {m}" for m in self.unsupported]
        for kind, label in ((MISSING, "missing in target"), (EXTRA, "extra in target"),
                            (DIFFERENT, "different")):
            ks = self.keys(kind)
            if ks:
                shown = "; ".join(self.key_text(k) for k in ks[:sample])
                more = f" ... and {len(ks) - sample} more" if len(ks) > sample else ""
                lines.append(f"  {label}: {shown}{more}")
        return "\n".join(lines)


def _jsonable(v: Any) -> Any:
    if isinstance(v, (int, float, str)) or v is None:
        return v
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


def dumps(reports: list[TableReport], sample: int | None = 100) -> str:
    return json.dumps({"equal": all(r.equal for r in reports),
                       "tables": [r.to_json(sample) for r in reports]})
