"""Column DDL through the apply engine into an embedded DuckDB target: each change followed (existing rows
holding the source's values), narrowed only when the values fit, stopped with a way back otherwise, and the
behaviours evolve / exception / lenient / ignore with the operator's decisions."""

from __future__ import annotations

import pytest

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.evolution import SchemaChangeConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.errors import ApplyError, UnsupportedDdl
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.testing import StreamBuilder

BASE = [("id", "int", False), ("name", "varchar(20)"), ("qty", "int")]


def _engine(target: DuckDbTarget | None = None, **schema_changes) -> ApplyEngine:
    t = target or DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=":memory:"))
    cfg = ApplyConfig(source="src", target="duck", schema_changes=SchemaChangeConfig(**schema_changes))
    e = ApplyEngine("src", t, TableMap.from_config(cfg))
    e.catalog.policy = cfg.schema_changes
    return e.start()


def _rows(e: ApplyEngine, sql: str = "SELECT * FROM t ORDER BY id") -> list[tuple]:
    return [tuple(r) for r in e.target.execute(sql).fetchall()]


def _cols(e: ApplyEngine) -> list[tuple]:
    return [(r[0], r[1], r[2]) for r in e.target.execute(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = 't' "
        "ORDER BY ordinal_position").fetchall()]


def _base() -> StreamBuilder:
    b = StreamBuilder().schema("shop.t", BASE, ["id"])
    b.tx(("c", "shop.t", None, {"id": 1, "name": "a", "qty": 1}), ("c", "shop.t", None, {"id": 2, "name": "bb",
                                                                                        "qty": 2}))
    return b


def test_add_columns_fill_existing_rows_with_the_source_value():
    b = _base()
    b.schema("shop.t", BASE + [("tier", "varchar(10)", True, "'std'")], ["id"],
             ddl="ALTER TABLE t ADD COLUMN tier VARCHAR(10) DEFAULT 'std'")
    b.schema("shop.t", BASE + [("tier", "varchar(10)", True, "'std'"), ("n", "int", False)], ["id"],
             ddl="ALTER TABLE t ADD COLUMN n INT NOT NULL")  # MariaDB fills 0
    b.tx(("c", "shop.t", None, {"id": 3, "name": "c", "qty": 3, "tier": "gold", "n": 9}))
    e = _engine()
    e.apply_records(b.as_records(), 0)
    assert _rows(e) == [(1, "a", 1, "std", 0), (2, "bb", 2, "std", 0), (3, "c", 3, "gold", 9)]
    assert _cols(e)[-1] == ("n", "INTEGER", "NO")


def test_an_expression_default_on_a_table_with_rows_stops_with_the_way_back():
    b = _base()
    b.schema("shop.t", BASE + [("u", "varchar(36)", True, "uuid()")], ["id"],
             ddl="ALTER TABLE t ADD COLUMN u VARCHAR(36) DEFAULT (uuid())")
    stop = b.seq - 1
    e = _engine()
    with pytest.raises(UnsupportedDdl) as info:
        e.apply_records(b.as_records(), 0)
    msg = str(info.value)
    assert info.value.sequence == stop and info.value.table == "shop.t" and "uuid()" in msg
    assert f"cdc schema evolve --config <file> --source src --target duck --table shop.t --sequence {stop}" in msg
    assert "--tables shop.t --repair" in msg
    assert e.target.read_progress("src").last_sequence == stop - 1 and len(_rows(e)) == 2
    # a way back: the operator adds and fills the column by hand and accepts; the restarted apply goes on
    e.target.execute("ALTER TABLE t ADD COLUMN u VARCHAR")
    e.target.execute("UPDATE t SET u = 'uuid-' || id")
    e.target.commit()
    e.target.save_schema_decision("src", stop, "shop.t", "accept")
    b.tx(("u", "shop.t", {"id": 1, "name": "a", "qty": 1, "u": "uuid-1"}, {"id": 1, "name": "A", "qty": 1,
                                                                          "u": "uuid-1"}))
    e2 = _engine(e.target)
    e2.apply_records(b.as_records(), 1)
    assert _rows(e2) == [(1, "A", 1, "uuid-1"), (2, "bb", 2, "uuid-2")]


def test_rename_drop_widen_and_null_are_followed():
    b = _base()
    b.schema("shop.t", [("id", "int", False), ("label", "varchar(20)"), ("qty", "int")], ["id"],
             ddl="ALTER TABLE t RENAME COLUMN name TO label")
    b.schema("shop.t", [("id", "int", False), ("label", "varchar(40)", False), ("qty", "bigint")], ["id"],
             ddl="ALTER TABLE t MODIFY label VARCHAR(40) NOT NULL, MODIFY qty BIGINT")
    b.schema("shop.t", [("id", "int", False), ("label", "varchar(40)", False)], ["id"], ddl="ALTER TABLE t DROP qty")
    b.tx(("c", "shop.t", None, {"id": 3, "label": "x" * 40}))
    e = _engine()
    e.apply_records(b.as_records(), 0)
    assert _rows(e) == [(1, "a"), (2, "bb"), (3, "x" * 40)]  # the renamed column kept its values
    assert _cols(e) == [("id", "INTEGER", "NO"), ("label", "VARCHAR", "NO")]


def test_a_narrowing_is_followed_when_the_values_fit_else_stops_naming_the_value():
    b = _base()
    b.schema("shop.t", [("id", "int", False), ("name", "varchar(5)"), ("qty", "smallint")], ["id"],
             ddl="ALTER TABLE t MODIFY name VARCHAR(5), MODIFY qty SMALLINT")
    b.tx(("c", "shop.t", None, {"id": 3, "name": "c", "qty": 3}))
    b.schema("shop.t", [("id", "int", False), ("name", "varchar(1)"), ("qty", "smallint")], ["id"],
             ddl="ALTER TABLE t MODIFY name VARCHAR(1)")
    stop = b.seq - 1
    e = _engine()
    with pytest.raises(UnsupportedDdl) as info:
        e.apply_records(b.as_records(), 0)
    assert info.value.fields["value"] == "bb" and info.value.fields["key"] == {"id": 2}
    assert info.value.fields["column"] == "name" and info.value.sequence == stop
    assert "cdc schema skip" in str(info.value)
    assert ("qty", "SMALLINT", "YES") in _cols(e) and len(_rows(e)) == 3


def test_exception_stops_at_any_change_and_evolve_decision_goes_on():
    b = _base()
    b.schema("shop.t", BASE + [("z", "int")], ["id"], ddl="ALTER TABLE t ADD z INT")
    stop = b.seq - 1
    e = _engine(behavior="exception")
    with pytest.raises(UnsupportedDdl, match="behaviour 'exception'"):
        e.apply_records(b.as_records(), 0)
    e.target.save_schema_decision("src", stop, "shop.t", "evolve")
    e2 = _engine(e.target, behavior="exception")
    e2.apply_records(b.as_records(), 1)
    assert _rows(e2) == [(1, "a", 1, None), (2, "bb", 2, None)]


def test_a_decision_for_another_table_is_not_taken():
    b = _base()
    b.schema("shop.t", BASE + [("z", "int")], ["id"], ddl="ALTER TABLE t ADD z INT")
    e = _engine(behavior="exception")
    e.target.save_schema_decision("src", b.seq - 1, "shop.other", "evolve")
    with pytest.raises(UnsupportedDdl, match="names table shop.other"):
        e.apply_records(b.as_records(), 0)


def test_lenient_keeps_dropped_and_renamed_columns():
    b = _base()
    b.schema("shop.t", [("id", "int", False), ("label", "varchar(20)"), ("qty", "int")], ["id"],
             ddl="ALTER TABLE t CHANGE name label VARCHAR(20)")
    b.schema("shop.t", [("id", "int", False), ("label", "varchar(20)")], ["id"], ddl="ALTER TABLE t DROP qty")
    b.tx(("c", "shop.t", None, {"id": 3, "label": "c"}))
    e = _engine(behavior="lenient")
    e.apply_records(b.as_records(), 0)
    assert _rows(e, "SELECT id, name, qty, label FROM t ORDER BY id") == [
        (1, "a", 1, "a"), (2, "bb", 2, "bb"), (3, None, None, "c")]


def test_ignore_keeps_the_shape_and_writes_only_its_columns_also_after_a_restart():
    b = _base()
    b.schema("shop.t", BASE + [("z", "int")], ["id"], ddl="ALTER TABLE t ADD z INT")
    b.tx(("c", "shop.t", None, {"id": 3, "name": "c", "qty": 3, "z": 7}))
    e = _engine(tables={"shop.*": "ignore"})
    n = len(b.as_records())
    e.apply_records(b.as_records(), 0)
    b.tx(("c", "shop.t", None, {"id": 4, "name": "d", "qty": 4, "z": 8}))
    e2 = _engine(e.target, tables={"shop.*": "ignore"})
    e2.apply_records(b.as_records()[n:], 1)
    assert _rows(e2) == [(1, "a", 1), (2, "bb", 2), (3, "c", 3), (4, "d", 4)]


def test_an_expression_default_with_an_evolve_decision_adds_the_column_for_a_repair_to_fill():
    b = _base()
    b.schema("shop.t", BASE + [("u", "varchar(36)", False, "uuid()")], ["id"],
             ddl="ALTER TABLE t ADD COLUMN u VARCHAR(36) NOT NULL DEFAULT (uuid())")
    e = _engine()
    e.target.save_schema_decision("src", b.seq - 1, "shop.t", "evolve")
    b.tx(("r", "shop.t", None, {"id": 2, "name": "bb", "qty": 2, "u": "uuid-2"}))  # what `--repair` publishes
    e.apply_records(b.as_records(), 0)
    assert _rows(e) == [(1, "a", 1, None), (2, "bb", 2, "uuid-2")]


def _lake(kind: str, tmp_path, **schema_changes):
    from streaming.targets import make_target

    cfg = (TargetConfig(name="lake", kind="delta", path=str(tmp_path / "lake")) if kind == "delta" else
           TargetConfig(name="lake", kind="iceberg", catalog_uri=f"sqlite:///{tmp_path}/catalog.db",
                        warehouse=str(tmp_path / "wh")))
    apply = ApplyConfig(source="src", target="lake", schema_changes=SchemaChangeConfig(**schema_changes))

    def engine() -> ApplyEngine:
        e = ApplyEngine("src", make_target(cfg), TableMap.from_config(apply))
        e.catalog.policy = apply.schema_changes
        return e.start()
    return engine


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
def test_a_lake_table_follows_column_ddl_with_rows_before_and_after(kind, tmp_path):
    """ADD with a constant default fills the stored rows (also rows of the same batch before the DDL), NOT NULL
    DEFAULT, DROP, RENAME, widenings (INT -> BIGINT, DECIMAL(12,2) -> (14,2), VARCHAR longer); a narrowing
    whose stored values fit is followed, one they do not fit stops naming column, key and value."""
    import decimal

    base = [("id", "int", False), ("name", "varchar(10)"), ("qty", "int"), ("price", "decimal(12,2)"),
            ("note", "varchar(10)")]
    b = StreamBuilder().schema("shop.t", base, ["id"])
    b.tx(("c", "shop.t", None, {"id": 1, "name": "a", "qty": 1, "price": "1.50", "note": "n1"}))
    b.tx(("c", "shop.t", None, {"id": 2, "name": "bb", "qty": 2, "price": "2.50", "note": "n2"}))
    steps = [("tier", "varchar(10)", True, "'std'"), ("flag", "tinyint", False, "1")]
    cols = list(base)
    for col, ddl in zip(steps, ["ADD COLUMN tier VARCHAR(10) DEFAULT 'std'", "ADD flag TINYINT NOT NULL DEFAULT 1"],
                        strict=True):
        cols.append(col)
        b.schema("shop.t", list(cols), ["id"], ddl=f"ALTER TABLE t {ddl}")
    b.tx(("u", "shop.t", {"id": 1}, {"id": 1, "name": "a", "qty": 3, "price": "1.50", "note": "n1", "tier": "gold",
                                     "flag": 0}))
    cols = [c for c in cols if c[0] != "note"]
    b.schema("shop.t", list(cols), ["id"], ddl="ALTER TABLE t DROP COLUMN note")
    cols = [("label",) + c[1:] if c[0] == "name" else c for c in cols]
    b.schema("shop.t", list(cols), ["id"], ddl="ALTER TABLE t RENAME COLUMN name TO label")
    widened = {"qty": "bigint", "price": "decimal(14,2)", "label": "varchar(40)"}
    cols = [(c[0], widened.get(c[0], c[1])) + c[2:] for c in cols]
    b.schema("shop.t", list(cols), ["id"], ddl="ALTER TABLE t MODIFY qty BIGINT, MODIFY price DECIMAL(14,2), "
                                              "MODIFY label VARCHAR(40)")
    b.tx(("c", "shop.t", None, {"id": 3, "label": "a long label", "qty": 2 ** 40, "price": "123456789012.25",
                                "tier": "x", "flag": 1}))
    e = _lake(kind, tmp_path)()
    e.apply_records(b.as_records(), 0)
    got = sorted(tuple(r.values()) for r in e.target._read_all("t").to_pylist())
    d = decimal.Decimal
    assert got == [(1, "a", 3, d("1.50"), "gold", 0), (2, "bb", 2, d("2.50"), "std", 1),
                   (3, "a long label", 2 ** 40, d("123456789012.25"), "x", 1)]
    assert e.target.table_columns("t") == ["id", "label", "qty", "price", "tier", "flag"]
    # a narrowing: 'a long label' does not fit VARCHAR(5): a stop naming it, the table as it was
    b2 = StreamBuilder(start_sequence=b.seq)
    b2.schema("shop.t", [(c[0], "varchar(5)") + c[2:] if c[0] == "label" else c for c in cols], ["id"],
              ddl="ALTER TABLE t MODIFY label VARCHAR(5)")
    with pytest.raises(UnsupportedDdl) as info:
        e.apply_records(b2.as_records(), 1)
    err = info.value
    assert err.sequence == b.seq and err.fields["column"] == "label" and err.fields["value"] == "a long label"
    assert err.fields["key"] == {"id": 3} and "cdc schema skip" in str(err)
    assert sorted(tuple(r.values()) for r in e.target._read_all("t").to_pylist()) == got


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
@pytest.mark.parametrize("log", ["_cdc_schema", "_cdc_progress"])
def test_a_lake_batch_killed_after_its_ddl_replays_to_the_same_table(kind, log, tmp_path, monkeypatch):
    """The batch's last commit fails after its DDL ran (before the schema log, or before the progress log): the
    replayed batch finds the table already changed, runs no DDL twice and ends with the same rows."""
    engine = _lake(kind, tmp_path)
    b = _base()
    first = b.as_records()
    e = engine()
    e.apply_records(first, 0)
    b.tx(("u", "shop.t", {"id": 1}, {"id": 1, "name": "a", "qty": 5}))
    b.schema("shop.t", BASE + [("tier", "varchar(10)", True, "'std'")], ["id"],
             ddl="ALTER TABLE t ADD COLUMN tier VARCHAR(10) DEFAULT 'std'")
    b.schema("shop.t", [("id", "int", False), ("label", "varchar(20)"), ("qty", "bigint"),
                        ("tier", "varchar(10)", True, "'std'")], ["id"],
             ddl="ALTER TABLE t RENAME COLUMN name TO label, MODIFY qty BIGINT")
    b.tx(("c", "shop.t", None, {"id": 3, "label": "c", "qty": 2 ** 40, "tier": "x"}))
    second = b.as_records()[len(first):]
    cls = type(e.target)
    real, calls = cls._append_log, []

    def crash(self, table, data):
        calls.append(table)
        if table == log and calls.count("_cdc_progress") >= (1 if log == "_cdc_schema" else 2):
            raise OSError(f"driver killed before the {table} commit")
        return real(self, table, data)

    monkeypatch.setattr(cls, "_append_log", crash)
    with pytest.raises(OSError):
        e.apply_records(second, 1)
    monkeypatch.setattr(cls, "_append_log", real)
    e.close()
    e2 = engine()
    e2.apply_records(second, 1)
    assert e2.target.table_columns("t") == ["id", "label", "qty", "tier"]
    got = sorted(tuple(r.values()) for r in e2.target._read_all("t").to_pylist())
    assert got == [(1, "a", 5, "std"), (2, "bb", 2, "std"), (3, "c", 2 ** 40, "x")]
    assert e2.target.latest_point()["last_sequence"] == b.seq - 1


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
def test_lenient_keeps_dropped_and_renamed_columns_in_a_lake_table(kind, tmp_path):
    b = _base()
    b.schema("shop.t", [("id", "int", False), ("label", "varchar(20)"), ("qty", "int")], ["id"],
             ddl="ALTER TABLE t CHANGE name label VARCHAR(20)")
    b.schema("shop.t", [("id", "int", False), ("label", "varchar(20)")], ["id"], ddl="ALTER TABLE t DROP qty")
    b.tx(("c", "shop.t", None, {"id": 3, "label": "c"}))
    e = _lake(kind, tmp_path, behavior="lenient")()
    e.apply_records(b.as_records(), 0)
    assert e.target.table_columns("t") == ["id", "name", "qty", "label"]
    assert sorted(tuple(r.values()) for r in e.target._read_all("t").to_pylist()) == [
        (1, "a", 1, "a"), (2, "bb", 2, "bb"), (3, None, None, "c")]


def test_an_iceberg_type_change_beyond_its_promotions_stops_before_any_ddl(tmp_path):
    b = _base()
    b.schema("shop.t", [("id", "int", False), ("name", "varchar(20)"), ("qty", "int"), ("z", "int")], ["id"],
             ddl="ALTER TABLE t ADD z INT")
    b.schema("shop.t", [("id", "int", False), ("name", "varchar(20)"), ("qty", "double"), ("y", "int")], ["id"],
             ddl="ALTER TABLE t MODIFY qty DOUBLE, RENAME COLUMN z TO y")
    e = _lake("iceberg", tmp_path)()
    with pytest.raises(UnsupportedDdl) as info:
        e.apply_records(b.as_records(), 0)
    assert "promotions" in str(info.value) and info.value.sequence == b.seq - 1
    assert e.target.table_columns("t") == ["id", "name", "qty", "z"]  # the rename did not run either


def test_a_stop_leaves_the_target_as_it_was_before_the_statement():
    """Every check of a statement runs before its first DDL: a statement renaming one column and narrowing
    another past a stored value changes nothing in the target."""
    b = _base()
    b.schema("shop.t", [("id", "int", False), ("label", "varchar(1)"), ("amount", "int"), ("z", "int")], ["id"],
             ddl="ALTER TABLE t ADD z INT, RENAME COLUMN qty TO amount, CHANGE name label VARCHAR(1)")
    e = _engine()
    with pytest.raises(UnsupportedDdl) as info:
        e.apply_records(b.as_records(), 0)
    assert info.value.fields["column"] == "name" and info.value.fields["value"] == "bb"  # named before the rename
    assert _cols(e) == [("id", "INTEGER", "NO"), ("name", "VARCHAR", "YES"), ("qty", "INTEGER", "YES")]


def test_a_default_the_record_does_not_carry_is_a_stop_not_nulls():
    """A reader that reads no defaults (the record's column has none) while the statement gives one: the target
    would hold NULL where the source has the default, so the apply stops."""
    b = _base()
    b.schema("shop.t", BASE + [("tier", "varchar(5)")], ["id"], ddl="ALTER TABLE t ADD (tier VARCHAR2(5) DEFAULT 'a')")
    e = _engine()
    with pytest.raises(UnsupportedDdl, match="carries none"):
        e.apply_records(b.as_records(), 0)


def test_a_first_sight_definition_only_adds_and_widens():
    """A restarted publisher sends the table map's shape (no statement): a column the catalog called POINT
    that the table map calls GEOMETRY, or no defaults, is no schema change; a new column is."""
    b = StreamBuilder().schema("shop.t", [("id", "int", False), ("p", "point"), ("c", "int", True, "5")], ["id"])
    b.schema("shop.t", [("id", "int", False), ("p", "geometry"), ("c", "int"), ("z", "int")], ["id"])
    b.tx(("c", "shop.t", None, {"id": 1, "p": None, "c": 1, "z": 2}))
    e = _engine(behavior="evolve")
    e.apply_records(b.as_records(), 0)
    assert _rows(e) == [(1, None, 1, 2)]
    assert [(c.type, c.default) for c in e.catalog.get("shop.t").schema.columns] == [
        ("int", None), ("point", None), ("int", "5"), ("int", None)]


def test_what_the_target_cannot_do_is_a_named_stop_or_a_named_refusal():
    """DuckDB cannot retype a key column: a stop from the dry pass. A DDL the target refuses otherwise (here a
    column of an index, which the apply did not create) rolls the batch back with an error naming table,
    statement and sequence, and the way back."""
    b = _base()
    b.schema("shop.t", [("id", "bigint", False), ("name", "varchar(20)"), ("qty", "int")], ["id"],
             ddl="ALTER TABLE t MODIFY id BIGINT")
    e = _engine()
    with pytest.raises(UnsupportedDdl, match="cannot change the type of a key column"):
        e.apply_records(b.as_records(), 0)
    b = _base()
    b.schema("shop.t", [("id", "int", False), ("name", "varchar(20)")], ["id"], ddl="ALTER TABLE t DROP qty")
    e = _engine()
    n = len(_base().as_records())
    e.apply_records(b.as_records()[:n], 0)
    e.target.execute("CREATE INDEX t_qty ON t (qty)")
    e.target.commit()
    with pytest.raises(ApplyError, match="refused the DDL for drop qty of shop.t at sequence") as info:
        e.apply_records(b.as_records(), 1)
    assert "cdc schema accept" in str(info.value) and e.target.read_progress("src").last_sequence == n


def test_a_statement_without_a_definition_stops_until_skipped():
    b = _base()
    b.ddl("shop.t", "DROP TABLE t")
    stop = b.seq - 1
    e = _engine()
    with pytest.raises(UnsupportedDdl, match="cdc schema skip"):
        e.apply_records(b.as_records(), 0)
    e.target.save_schema_decision("src", stop, "shop.t", "skip")
    _engine(e.target).apply_records(b.as_records(), 1)
    assert e.target.read_progress("src").last_sequence == stop and len(_rows(e)) == 2


def test_a_parquet_changelog_follows_columns_and_keeps_decisions(tmp_path):
    from streaming.targets.parquet.target import ParquetTarget

    cfg = TargetConfig(name="pq", kind="parquet", path=str(tmp_path / "pq"))
    b = _base()
    b.schema("shop.t", [("id", "int", False), ("label", "varchar(20)")], ["id"],
             ddl="ALTER TABLE t RENAME COLUMN name TO label, DROP qty")
    b.tx(("c", "shop.t", None, {"id": 3, "label": "c"}))
    b.ddl("shop.t", "DROP TABLE t")
    stop = b.seq - 1
    e = ApplyEngine("src", ParquetTarget(cfg), TableMap.from_config(ApplyConfig(source="src", target="pq"))).start()
    with pytest.raises(UnsupportedDdl):
        e.apply_records(b.as_records(), 0)
    ParquetTarget(cfg).save_schema_decision("src", stop, "shop.t", "skip")
    t = ParquetTarget(cfg).open()
    assert t.schema_decision("src", stop) == ("skip", "shop.t") and t.skipped_tables("src") == {"shop.t"}
    e2 = ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target="pq"))).start()
    e2.apply_records(b.as_records(), 1)
    assert t.read_progress("src").last_sequence == stop
    # one batch across the DDL: a file per shape, so no row carries a column its table lacked (read as NULL)
    import pyarrow.parquet as pq

    files = sorted((tmp_path / "pq" / "t").glob("*.parquet"))
    shapes = [[c for c in pq.read_table(f).column_names if not c.startswith("_")] for f in files]
    assert len(files) == 2 and shapes[-1] == ["id", "label"] and "label" not in shapes[0], shapes
    assert pq.read_table(files[-1]).column("id").to_pylist() == [3]


ORA = [("ID", "number", False), ("NAME", "varchar2(20)"), ("QTY", "number(8,2)"), ("CODE", "raw(4)")]


def test_oracle_column_sizes_widen_and_narrow_the_target_column():
    """Oracle SCHEMA records spell sizes as MySQL's (readers/oracle/columns.py): the same rules follow them."""
    b = StreamBuilder().schema("APP.T", ORA, ["ID"])
    b.tx(("c", "APP.T", None, {"ID": "1", "NAME": "abcdefghijkl", "QTY": "123456.25", "CODE": "AAE="}))
    b.schema("APP.T", [("ID", "number", False), ("NAME", "varchar2(40)"), ("QTY", "number(12,2)"),
                       ("CODE", "raw(8)")], ["ID"],
             ddl='alter table "APP"."T" modify ("NAME" varchar2(40), "QTY" number(12,2), "CODE" raw(8))')
    b.tx(("c", "APP.T", None, {"ID": "2", "NAME": "x" * 40, "QTY": "1234567890.5", "CODE": "AAECAwQFBgc="}))
    b.tx(("d", "APP.T", {"ID": "2", "NAME": "x" * 40, "QTY": "1234567890.5", "CODE": "AAECAwQFBgc="}, None))
    b.schema("APP.T", [("ID", "number", False), ("NAME", "varchar2(12)"), ("QTY", "number(12,2)"),
                       ("CODE", "raw(8)")], ["ID"], ddl='alter table "APP"."T" modify ("NAME" varchar2(12))')
    e = _engine()
    e.apply_records(b.as_records(), 0)
    dst = e.catalog.tables["APP.T"].target_table
    types = {r[0]: r[1] for r in e.target.execute("SELECT column_name, data_type FROM information_schema.columns "
                                                  "WHERE table_name = ?", [dst]).fetchall()}
    assert types["QTY"] == "DECIMAL(12,2)"  # widened; DuckDB's VARCHAR has no length to change (NAME)
    assert _rows(e, f'SELECT "ID", "NAME", "QTY" FROM "{dst}" ORDER BY 1')[0][1:] == ("abcdefghijkl", 123456.25)
    b.schema("APP.T", [("ID", "number", False), ("NAME", "varchar2(10)"), ("QTY", "number(12,2)"),
                       ("CODE", "raw(8)")], ["ID"], ddl='alter table "APP"."T" modify ("NAME" varchar2(10))')
    stop = b.seq - 1
    with pytest.raises(UnsupportedDdl) as info:
        e.apply_records(b.as_records(), 0)
    err = info.value
    assert (err.table, err.column, err.value, err.sequence) == ("APP.T", "NAME", "abcdefghijkl", stop), str(err)
    assert "varchar2(12) -> varchar2(10)" in str(err) and "cdc schema skip" in str(err)


def test_a_swap_of_column_names_moves_the_values_also_under_lenient():
    for behavior in ("evolve", "lenient"):
        b = _base()  # (id, name varchar, qty int): each column keeps its place under the other's name
        b.schema("shop.t", [("id", "int", False), ("qty", "varchar(20)"), ("name", "int")], ["id"],
                 ddl="ALTER TABLE t CHANGE name qty VARCHAR(20), CHANGE qty name INT")
        b.tx(("c", "shop.t", None, {"id": 3, "name": 3, "qty": "c"}))
        e = _engine(behavior=behavior)
        e.apply_records(b.as_records(), 0)
        assert _rows(e, "SELECT id, name, qty FROM t ORDER BY id") == [(1, 1, "a"), (2, 2, "bb"), (3, 3, "c")]
        assert [c[0] for c in _cols(e)] == ["id", "qty", "name"]


@pytest.mark.parametrize("kind", ["delta"])
def test_a_swap_of_column_names_on_a_lake_table_stops_with_the_way_back(kind, tmp_path):
    b = _base()
    b.schema("shop.t", [("id", "int", False), ("qty", "int"), ("name", "varchar(20)")], ["id"],
             ddl="ALTER TABLE t RENAME COLUMN name TO qty, RENAME COLUMN qty TO name")
    with pytest.raises(UnsupportedDdl) as info:
        _lake(kind, tmp_path)().apply_records(b.as_records(), 0)
    assert "exchanged" in str(info.value) and "cdc schema accept" in str(info.value)


def test_lenient_stops_at_a_new_column_under_the_name_of_one_it_kept():
    b = _base()
    b.schema("shop.t", [("id", "int", False), ("name", "varchar(20)")], ["id"], ddl="ALTER TABLE t DROP COLUMN qty")
    b.tx(("c", "shop.t", None, {"id": 3, "name": "c"}))
    b.schema("shop.t", [("id", "int", False), ("name", "varchar(20)"), ("qty", "int", False, "7")], ["id"],
             ddl="ALTER TABLE t ADD COLUMN qty INT NOT NULL DEFAULT 7")
    stop = b.seq - 1
    e = _engine(behavior="lenient")
    with pytest.raises(UnsupportedDdl) as info:
        e.apply_records(b.as_records(), 0)
    assert info.value.sequence == stop and "lenient" in str(info.value) and "cdc schema evolve" in str(info.value)
    assert _rows(e) == [(1, "a", 1), (2, "bb", 2), (3, "c", None)]  # kept, nullable
    e.target.save_schema_decision("src", stop, "shop.t", "evolve")
    e2 = _engine(e.target, behavior="lenient")
    e2.apply_records(b.as_records(), 1)
    assert _rows(e2) == [(1, "a", 7), (2, "bb", 7), (3, "c", 7)]  # the source's values of the new column


def test_a_rename_into_the_name_of_a_dropped_column_carries_the_renamed_values():
    e = _engine()
    b2 = _base()
    b2.schema("shop.t", [("id", "int", False), ("name", "int")], ["id"],
              ddl="ALTER TABLE t DROP COLUMN name, RENAME COLUMN qty TO name")
    b2.tx(("c", "shop.t", None, {"id": 3, "name": 30}))
    e.apply_records(b2.as_records(), 0)
    assert _rows(e) == [(1, 1), (2, 2), (3, 30)] and [c[0] for c in _cols(e)] == ["id", "name"]
    e3 = _engine(behavior="lenient")
    with pytest.raises(UnsupportedDdl) as info:
        e3.apply_records(b2.as_records(), 0)
    assert "lenient" in str(info.value) and "cdc schema evolve" in str(info.value)
