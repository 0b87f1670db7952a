"""The Delta and Iceberg targets through the apply engine (no Spark, no broker: local files and SQLite).

Random batches (inserts, updates, key moves, deletes, a keyless table, TRUNCATE,
ADD COLUMN) must leave each table equal to a model, read back with polars (its
own Parquet reader; deltalake / pyiceberg only plan the files); every batch's
consistent point, read by version / snapshot id, equals the model as of that
batch; replays after a crash between two table commits apply nothing twice.
"""

from __future__ import annotations

import base64
import decimal
import random

import polars as pl
import pytest

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.errors import BadRecord, TargetError
from streaming.targets import lake, make_target
from streaming.testing import StreamBuilder

ACCT = [("id", "int"), ("region", "varchar(4)"), ("balance", "decimal(12,2)"), ("at", "datetime(6)")]
LINE = [("acct", "int"), ("n", "smallint"), ("qty", "bigint unsigned"), ("note", "text"), ("sig", "varbinary(4)")]
TAGS = [("tag", "varchar(8)"), ("n", "int")]


def config(kind: str, tmp_path) -> TargetConfig:
    if kind == "delta":
        return TargetConfig(name="lake", kind="delta", path=str(tmp_path / "lake"))
    return TargetConfig(name="ice", kind="iceberg", catalog_uri=f"sqlite:///{tmp_path}/catalog.db",
                        warehouse=str(tmp_path / "warehouse"))


@pytest.fixture(params=["delta", "iceberg"])
def kind(request):
    return request.param


def read(target, table: str, version=None) -> pl.DataFrame:
    """The table as polars reads it (latest, or as of a version / snapshot id)."""
    if target.dialect == "delta":
        return pl.read_delta(target.uri(table), version=version)
    t = target.catalog.load_table((target.namespace, table))
    return pl.scan_iceberg(t, snapshot_id=version, reader_override="pyiceberg").collect()


def rows(df: pl.DataFrame, cols: list[str]) -> list[tuple]:
    out = []
    for r in df.select(cols).iter_rows():
        out.append(tuple((int(v) if v.as_tuple().exponent == 0 else format(v, "f")) if isinstance(v, decimal.Decimal)
                         else base64.b64encode(v).decode() if isinstance(v, bytes)
                         else v.isoformat() if hasattr(v, "isoformat") else v for v in r))
    return sorted(out, key=repr)


def model_rows(model: dict, cols: list[str]) -> list[tuple]:
    vals = model.values() if isinstance(model, dict) else model
    return sorted((tuple(r.get(c) for c in cols) for r in vals), key=repr)


def engine(target):
    return ApplyEngine("src", target, TableMap.from_config(ApplyConfig(source="src", target=target.name))).start()


def truncate(b: StreamBuilder, table: str) -> None:
    """A source transaction holding a TRUNCATE: an ``op: "t"`` record with no row image and no key."""
    b.tx(("d", table, {"acct": 0, "n": 0}, None))
    _, v = b.items[-2]
    b.items[-2] = (None, {**v, "op": "t", "before": None, "after": None})


def _acct(i: int, rng: random.Random) -> dict:
    return {"id": i, "region": rng.choice(["n", "s", "e"]), "balance": f"{rng.randint(0, 99999)}.{rng.randint(10, 99)}",
            "at": f"2024-03-0{rng.randint(1, 9)}T10:11:12.{rng.randint(100000, 999999)}"}


def test_random_batches_equal_the_model_and_every_consistent_point(kind, tmp_path):
    rng = random.Random(18)
    target = make_target(config(kind, tmp_path))
    b = StreamBuilder().schema("shop.acct", ACCT, ["id"]).schema("shop.line", LINE, ["acct", "n"]) \
        .schema("shop.tags", TAGS, [])
    accts: dict[int, dict] = {}
    lines: dict[tuple, dict] = {}
    tags: list[dict] = []
    points = []  # (consistent point, model copies)
    e = engine(target)
    next_id, done = 0, 0
    acct_cols = [c for c, _ in ACCT]
    for batch in range(8):
        for _ in range(rng.randint(3, 12)):  # source transactions of this batch, several tables each
            ops = []
            for _ in range(rng.randint(1, 40)):
                r = rng.random()
                if r < 0.4 or not accts:
                    row = {**_acct(next_id, rng), **({"vip": rng.choice([0, 1, None])} if "vip" in acct_cols else {})}
                    next_id += 1
                    accts[row["id"]] = row
                    ops.append(("c", "shop.acct", None, dict(row)))
                    ln = {"acct": row["id"], "n": rng.randint(0, 3), "qty": 2**63 + rng.randint(0, 9), "note": "é\n",
                          "sig": rng.choice(["AAE=", "/w==", None])}
                    if (ln["acct"], ln["n"]) not in lines:
                        lines[(ln["acct"], ln["n"])] = ln
                        ops.append(("c", "shop.line", None, dict(ln)))
                elif r < 0.65:
                    old = accts[rng.choice(list(accts))]
                    new = {**old, "balance": f"{rng.randint(0, 999)}.00"}
                    accts[old["id"]] = new
                    ops.append(("u", "shop.acct", dict(old), dict(new)))
                elif r < 0.75:  # key move
                    old = accts.pop(rng.choice(list(accts)))
                    new = {**old, "id": next_id}
                    next_id += 1
                    accts[new["id"]] = new
                    ops.append(("u", "shop.acct", dict(old), dict(new)))
                elif r < 0.85:
                    old = accts.pop(rng.choice(list(accts)))
                    ops.append(("d", "shop.acct", dict(old), None))
                elif r < 0.93:
                    t = {"tag": rng.choice("abc"), "n": rng.randint(0, 1)}
                    tags.append(t)
                    ops.append(("c", "shop.tags", None, dict(t)))
                elif tags:
                    t = tags.pop(rng.randrange(len(tags)))
                    ops.append(("d", "shop.tags", dict(t), None))
                if lines and rng.random() < 0.1:
                    k = rng.choice(list(lines))
                    ops.append(("d", "shop.line", dict(lines.pop(k)), None))
            b.tx(*ops)
        if batch == 3:  # TRUNCATE of the line table mid-batch, then new rows
            truncate(b, "shop.line")
            lines.clear()
            ln = {"acct": 1, "n": 9, "qty": 7, "note": None, "sig": "AAE="}
            lines[(1, 9)] = ln
            b.tx(("c", "shop.line", None, dict(ln)))
        if batch == 5:  # ADD COLUMN: a barrier, followed
            ACCT2 = ACCT + [("vip", "tinyint")]
            b.schema("shop.acct", ACCT2, ["id"], ddl="ALTER TABLE acct ADD COLUMN vip TINYINT")
            acct_cols = [c for c, _ in ACCT2]
            for a in accts.values():
                a.setdefault("vip", None)
            row = {**_acct(next_id, rng), "vip": 1}
            next_id += 1
            accts[row["id"]] = row
            b.tx(("c", "shop.acct", None, dict(row)))
        recs = b.as_records()
        e.apply_records(recs[done:], batch)
        done = len(recs)
        point = target.latest_point()
        assert point["last_sequence"] == b.seq - 1 and point["batch_id"] == batch
        points.append((point, list(acct_cols), dict(accts), dict(lines), list(tags)))
        assert rows(read(target, "acct"), acct_cols) == model_rows(accts, acct_cols)
    lcols, tcols = [c for c, _ in LINE], [c for c, _ in TAGS]
    assert rows(read(target, "line"), lcols) == model_rows(lines, lcols)
    assert rows(read(target, "tags"), tcols) == model_rows(tags, tcols)
    for point, cols, a, ln, tg in points:  # time travel to each consistent point
        v = point["tables"]
        assert rows(read(target, "acct", v["acct"]), cols) == model_rows(a, cols)
        assert rows(read(target, "line", v["line"]), lcols) == model_rows(ln, lcols)
        assert rows(read(target, "tags", v["tags"]), tcols) == model_rows(tg, tcols)
    e.close()


def test_crash_between_table_commits_replays_without_duplicates(kind, tmp_path, monkeypatch):
    """The progress log write fails after both tables committed (a driver killed there): the replayed batch
    skips both tables by their recorded sequence; a larger replay (checkpoint lost) applies only what is new."""
    cfg = config(kind, tmp_path)
    b = StreamBuilder().schema("shop.acct", ACCT, ["id"]).schema("shop.tags", TAGS, [])
    rng = random.Random(3)
    b.tx(*[("c", "shop.acct", None, _acct(i, rng)) for i in range(50)], ("c", "shop.tags", None, {"tag": "a", "n": 1}))
    first = b.as_records()
    target = make_target(cfg)
    e = engine(target)
    e.apply_records(first, 0)
    b.tx(*[("c", "shop.acct", None, _acct(i, rng)) for i in range(50, 80)], ("c", "shop.tags", None, {"tag": "a", "n": 1}),
         ("d", "shop.acct", _acct(0, rng), None))
    second = b.as_records()
    real = type(target)._append_log

    def crash(self, table, data):
        if table == lake.PROGRESS_LOG:
            raise OSError("driver killed before the progress log commit")
        return real(self, table, data)

    monkeypatch.setattr(type(target), "_append_log", crash)
    with pytest.raises(OSError):
        e.apply_records(second[len(first):], 1)
    monkeypatch.setattr(type(target), "_append_log", real)
    versions = {t: make_target(cfg).open()._version(t) for t in ("acct", "tags")}
    e.close()
    restarted = make_target(cfg)
    e2 = engine(restarted)
    assert e2.progress.last_sequence == len(first)  # the progress log still says batch 0
    res = e2.apply_records(second[len(first):], 1)  # the same batch again
    assert not res.skipped
    assert {t: restarted._version(t) for t in ("acct", "tags")} == versions  # both tables skipped
    assert len(read(restarted, "acct")) == 79 and len(read(restarted, "tags")) == 2
    assert restarted.latest_point()["last_sequence"] == len(second) and restarted.latest_point()["tables"] == versions
    b.tx(("c", "shop.acct", None, _acct(500, rng)))
    e2.apply_records(b.as_records()[len(first):], 2)  # a bigger replay (checkpoint gone): from batch 1 on
    assert len(read(restarted, "acct")) == 80 and len(read(restarted, "tags")) == 2
    e2.close()


def test_value_the_table_cannot_hold_is_named(kind, tmp_path):
    target = make_target(config(kind, tmp_path))
    b = StreamBuilder().schema("shop.acct", ACCT, ["id"])
    b.tx(("c", "shop.acct", None, {"id": 1, "region": "n", "balance": "1.00", "at": "2024-01-01T00:00:00"}),
         ("c", "shop.acct", None, {"id": 2, "region": "n", "balance": "12345678901234.5", "at": "2024-01-01T00:00:00"}))
    e = engine(target)
    with pytest.raises(BadRecord) as info:
        e.apply_records(b.as_records(), 0)
    assert info.value.table == "shop.acct" and "balance" in str(info.value) and "12345678901234.5" in str(info.value)
    assert target.latest_point() is None  # nothing committed
    e.close()


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_stream_values_become_the_lake_types(fmt):
    import pyarrow as pa

    from streaming.targets import lake_types

    cols = [("b", "bit(3)"), ("u", "bigint unsigned"), ("z", "timestamp(6)"), ("d", "datetime"), ("bin", "blob"),
            ("t", "time"), ("s", "smallint"), ("j", "json")]
    schema = pa.schema([(n, lake_types.arrow_type(t, fmt)) for n, t in cols])
    row = {"b": 5, "u": "18446744073709551615", "z": "2024-01-02T03:04:05.5Z", "d": "2024-01-02T03:04:05",
           "bin": "AAE=", "t": "-838:59:59", "s": -3, "j": '{"a": 1}'}
    got = lake_types.rows_to_table([row], schema, "db.t").to_pylist()[0]
    assert got["b"] == 5 and str(got["u"]) == "18446744073709551615" and got["bin"] == b"\x00\x01"
    assert got["z"].isoformat() == "2024-01-02T03:04:05.500000+00:00" and got["d"].isoformat() == "2024-01-02T03:04:05"
    assert got["t"] == "-838:59:59" and got["s"] == -3 and got["j"] == '{"a": 1}'
    assert schema.field("s").type == (pa.int16() if fmt == "delta" else pa.int32())
    with pytest.raises(ValueError, match=r"db.t.d: value '2024-13-45' does not convert"):
        lake_types.rows_to_table([{**row, "d": "2024-13-45"}], schema, "db.t")


def test_dead_letter_table_takes_the_bad_row_and_the_batch_applies(kind, tmp_path):
    cfg = config(kind, tmp_path).model_copy(update={"dead_letter_table": "cdc_dead"})
    target = make_target(cfg)
    b = StreamBuilder().schema("shop.acct", ACCT, ["id"])
    b.tx(("c", "shop.acct", None, {"id": 1, "region": "n", "balance": "1.00", "at": "2024-01-01T00:00:00"}),
         ("c", "shop.acct", None, {"id": 2, "region": "n", "balance": "1e40", "at": "2024-01-01T00:00:00"}))
    e = engine(target)
    res = e.apply_records(b.as_records(), 0)
    assert res.dead_letters == 1
    assert rows(read(target, "acct"), ["id", "balance"]) == [(1, "1.00")]
    dead = target._read_all("cdc_dead").to_pylist()
    assert len(dead) == 1 and dead[0]["source_table"] == "shop.acct" and "1e40" in dead[0]["record_value"]
    assert target.latest_point()["last_sequence"] == b.seq - 1
    e.close()


def test_secret_store_settings_reach_the_libraries_unchanged_and_are_never_shown(tmp_path):
    """storage_options / catalog secrets are masked in the config but deltalake and pyiceberg get the real
    values: a local-path Delta target with object-store keys (the local store ignores them, deltalake keeps
    them on the table), an Iceberg SQL catalog whose URI holds a password (``?password=``: SQLite ignores it,
    SQLAlchemy keeps it on the engine's URL) and a secret catalog property read from a ``_file``."""
    secret, token, pw = "aws-Secret-9f1c", "sess-Token-77ab", "cat-Pw-31d0"
    (tmp_path / "key").write_text(secret + "\n")
    (tmp_path / "s3key").write_text(secret + "\n")
    delta = TargetConfig(name="lake", kind="delta", path=str(tmp_path / "lake"),
                         storage_options={"AWS_SECRET_ACCESS_KEY_FILE": str(tmp_path / "key"),
                                          "AWS_SESSION_TOKEN": token, "AWS_REGION": "eu-west-1"})
    ice = TargetConfig(name="ice", kind="iceberg", catalog_uri=f"sqlite:///{tmp_path}/catalog.db?password={pw}",
                       warehouse=str(tmp_path / "warehouse"),
                       catalog={"s3.secret-access-key_file": str(tmp_path / "s3key"), "s3.region": "eu-west-1"})
    for cfg in (delta, ice):
        for shown in (repr(cfg), str(cfg), cfg.model_dump_json()):
            assert secret not in shown and token not in shown and pw not in shown, shown
    assert "eu-west-1" in repr(delta) and "password=***" in repr(ice)  # the settings are shown, masked
    b = StreamBuilder().schema("shop.acct", ACCT, ["id"])
    b.tx(("c", "shop.acct", None, _acct(1, random.Random(1))))
    for cfg in (delta, ice):
        target = make_target(cfg)
        e = engine(target)
        e.apply_records(b.as_records(), 0)
        assert len(read(target, "acct")) == 1
        if cfg.kind == "delta":
            assert target._tables["acct"]._storage_options == {
                "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": token, "AWS_REGION": "eu-west-1"}
        else:
            assert target.catalog.engine.url.query["password"] == pw
            assert target.catalog.properties["s3.secret-access-key"] == secret
            assert target.catalog.properties["s3.region"] == "eu-west-1"
        e.close()


def test_an_iceberg_catalog_error_masks_the_uri_password(tmp_path):
    pw = "cat-Pw-31d0"
    target = make_target(TargetConfig(name="ice", kind="iceberg", warehouse=str(tmp_path / "wh"),
                                      catalog_uri=f"postgresql://cdc:{pw}@127.0.0.1:1/catalog?connect_timeout=2"))
    with pytest.raises(TargetError) as info:
        target.catalog  # noqa: B018 - opening the catalog is what fails
    text = str(info.value)
    assert "postgresql://cdc:***@127.0.0.1:1/catalog" in text and pw not in text, text
