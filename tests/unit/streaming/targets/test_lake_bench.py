"""`cdc bench apply --target delta|iceberg` on a small stream, without Spark: every figure is there and sane."""

from __future__ import annotations

import argparse

import pytest

from cdc.bench import apply


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
def test_lake_bench_reports_engine_append_and_update_figures(kind):
    parser = argparse.ArgumentParser()
    apply.configure(parser)
    args = parser.parse_args(["--target", kind, "--rows", "3000", "--tx-rows", "50", "--update-rows", "1000",
                              "--batch-records", "1500", "--no-spark"])
    out = apply.run(args)
    assert out["target"] == kind and out["rows"] == 3000
    for figure in ("engine_rows_per_s", "append_rows_per_s", "append_from_json_rows_per_s", "update_rows_per_s"):
        assert out[figure] > 0, out
    assert out["ratio"] == pytest.approx(out["engine_rows_per_s"] / out["append_rows_per_s"], abs=0.002)
    assert "apply_rows_per_s" not in out  # --no-spark
