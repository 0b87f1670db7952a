"""A target schema the user made, with foreign keys and unique keys, through the engine (no Spark). Part of the
target conformance suite: every SQL kind that enforces these constraints (tests/fixtures/targets.py).

Real PostgreSQL and MariaDB, and DuckDB for unique keys. The tables exist before the apply, with the
constraints users put on them: orders and items reference their parents, categories form a tree (a
self-reference), customers have a unique e-mail and items a unique (order, position). The source's
transactions touch parents and children in both orders and exchange unique values. The engine writes
deletes children-first and upserts parents-first from the target's foreign keys (SqlTarget.foreign_keys),
and a self-referencing table's rows by their values; what its own write order still breaks (a unique value
exchanged, two rows referencing each other) is retried in stream order before any row is called bad: the
target ends equal to the source, nothing is
dead-lettered, the progress row at the end. A collision on a unique key other than the primary key is an
error on every kind, never an overwrite of the other row (MySQL's ON DUPLICATE KEY UPDATE did that).

DuckDB is left out of the foreign-key cases: its foreign keys refuse a parent's delete or upsert after its
children were deleted in the same transaction (checked against the committed state), so even the source's
own order fails there (docs/apply-faults.md).
"""

from __future__ import annotations

import pytest

from cdc.config.models import ApplyConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.stream.records import Batch
from streaming.targets import make_target
from streaming.testing import StreamBuilder
from tests.fixtures.targets import conformance_kinds, fresh_target_config

pytestmark = [pytest.mark.postgres, pytest.mark.mysql]

CUSTOMERS = [("id", "bigint"), ("email", "varchar(60)"), ("name", "varchar(40)")]
ORDERS = [("id", "bigint"), ("customer_id", "bigint"), ("note", "varchar(40)")]
ITEMS = [("id", "bigint"), ("order_id", "bigint"), ("position", "int"), ("sku", "varchar(20)")]
CATEGORIES = [("id", "bigint"), ("parent_id", "bigint"), ("name", "varchar(40)")]
FK_KINDS = [("postgres", ""), ("postgres", " DEFERRABLE"), ("mysql", "")]  # DuckDB: see the module docstring


def _schema_sql(t, deferrable: str, fks: bool = True) -> list[str]:
    q, n = t.quote, t.qualified

    def ref(col: str, parent: str) -> str:
        return f", FOREIGN KEY ({q(col)}) REFERENCES {n(parent)} (id){deferrable}" if fks else ""

    return [
        f"CREATE TABLE {n('customers')} (id bigint PRIMARY KEY, email varchar(60) NOT NULL UNIQUE, name varchar(40))",
        f"CREATE TABLE {n('orders')} (id bigint PRIMARY KEY, customer_id bigint NOT NULL, note varchar(40)"
        f"{ref('customer_id', 'customers')})",
        f"CREATE TABLE {n('items')} (id bigint PRIMARY KEY, order_id bigint NOT NULL, {q('position')} int NOT NULL, "
        f"sku varchar(20), UNIQUE (order_id, {q('position')}){ref('order_id', 'orders')})",
        f"CREATE TABLE {n('categories')} (id bigint PRIMARY KEY, parent_id bigint, name varchar(40)"
        f"{ref('parent_id', 'categories')})",
    ]


def _made(request, tmp_path, kind: str, deferrable: str, fks: bool):
    config = fresh_target_config(request, tmp_path, kind)
    t = make_target(config.model_copy(update={"dead_letter_table": "cdc_dead"}))
    t.open()
    for sql in _schema_sql(t, deferrable, fks):
        t.execute(sql)
    t.commit()
    return t


@pytest.fixture(params=FK_KINDS, ids=lambda p: p[0] + ("-deferrable" if p[1] else ""))
def target(request, tmp_path):
    """A target with the user's tables and constraints made before the apply starts: PostgreSQL with immediate
    constraints (the default) or DEFERRABLE foreign keys (SET CONSTRAINTS ALL DEFERRED applies), MariaDB."""
    t = _made(request, tmp_path, *request.param, fks=True)
    yield t
    t.close()


@pytest.fixture(params=conformance_kinds())
def unique_target(request, tmp_path):
    """Every SQL kind with the same tables, their unique keys and no foreign keys."""
    t = _made(request, tmp_path, request.param, "", fks=False)
    yield t
    t.close()


class Model:
    """The source's tables as its transactions leave them (the expected target)."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[int, dict]] = {}

    def apply(self, op: str, table: str, before: dict | None, after: dict | None) -> tuple:
        rows = self.tables.setdefault(table.split(".")[1], {})
        if before is not None:
            del rows[before["id"]]
        if after is not None:
            rows[after["id"]] = after
        return op, table, before, after


def _tx(b: StreamBuilder, m: Model, *changes: tuple) -> None:
    b.tx(*[m.apply(*c) for c in changes])


def _rows(t, table: str, cols: list[tuple[str, str]]) -> list[tuple]:
    names = ", ".join(t.quote(c) for c, _ in cols)
    cur = t.execute(f"SELECT {names} FROM {t.qualified(table)} ORDER BY id")
    out = [tuple(r) for r in cur.fetchall()]
    t.commit()
    return out


def _want(m: Model, table: str, cols: list[tuple[str, str]]) -> list[tuple]:
    return [tuple(r[c] for c, _ in cols) for _, r in sorted(m.tables.get(table, {}).items())]


def _dead_letters(t) -> int:
    if t.table_columns("cdc_dead") is None:
        t.commit()
        return 0
    n = t.execute(f"SELECT count(*) FROM {t.qualified('cdc_dead')}").fetchone()[0]
    t.commit()
    return n


@pytest.mark.parametrize("entry", ["records", "arrow"])
def test_parents_children_and_swaps_apply_whole(target, entry):
    b = (StreamBuilder().schema("shop.customers", CUSTOMERS, ["id"]).schema("shop.orders", ORDERS, ["id"])
         .schema("shop.items", ITEMS, ["id"]).schema("shop.categories", CATEGORIES, ["id"]))
    m = Model()
    c1 = {"id": 1, "email": "a@x", "name": "ann"}
    c2 = {"id": 2, "email": "b@x", "name": "bob"}
    o10, o11 = {"id": 10, "customer_id": 1, "note": "n10"}, {"id": 11, "customer_id": 2, "note": "n11"}
    i100 = {"id": 100, "order_id": 10, "position": 1, "sku": "s100"}
    i101 = {"id": 101, "order_id": 10, "position": 2, "sku": "s101"}
    i102 = {"id": 102, "order_id": 11, "position": 1, "sku": "s102"}
    k1, k2 = {"id": 1, "parent_id": None, "name": "root"}, {"id": 2, "parent_id": 1, "name": "mid"}
    k3 = {"id": 3, "parent_id": 2, "name": "leaf"}
    _tx(b, m, ("c", "shop.customers", None, c1), ("c", "shop.customers", None, c2),
        ("c", "shop.orders", None, o10), ("c", "shop.orders", None, o11),
        ("c", "shop.items", None, i100), ("c", "shop.items", None, i101), ("c", "shop.items", None, i102),
        ("c", "shop.categories", None, k1), ("c", "shop.categories", None, k2), ("c", "shop.categories", None, k3))
    seeded = len(b.items)
    # an order deleted the way applications do: its items first, then the order
    _tx(b, m, ("d", "shop.items", i102, None), ("d", "shop.orders", o11, None))
    # an order made with its item: parent first (the batch touched items before orders)
    c3 = {"id": 3, "email": "c@x", "name": "cy"}
    o12 = {"id": 12, "customer_id": 3, "note": "n12"}
    i103 = {"id": 103, "order_id": 12, "position": 1, "sku": "s103"}
    _tx(b, m, ("c", "shop.customers", None, c3), ("c", "shop.orders", None, o12), ("c", "shop.items", None, i103))
    # the category tree re-parented: a new node, the leaf moved under it, the old middle node deleted
    k4 = {"id": 4, "parent_id": 1, "name": "new mid"}
    k3b = {**k3, "parent_id": 4}
    _tx(b, m, ("c", "shop.categories", None, k4), ("u", "shop.categories", k3, k3b),
        ("d", "shop.categories", k2, None))
    # two customers exchange their e-mails through a temporary value (unique e-mail)
    c1t, c2b = {**c1, "email": "tmp@x"}, {**c2, "email": "a@x"}
    c1b = {**c1, "email": "b@x"}
    _tx(b, m, ("u", "shop.customers", c1, c1t), ("u", "shop.customers", c2, c2b), ("u", "shop.customers", c1t, c1b))
    # two items of an order re-ordered (unique (order_id, position))
    i100t, i101b, i100b = {**i100, "position": 3}, {**i101, "position": 1}, {**i100, "position": 2}
    _tx(b, m, ("u", "shop.items", i100, i100t), ("u", "shop.items", i101, i101b), ("u", "shop.items", i100t, i100b))
    # a customer and everything of theirs deleted, children first, in one transaction
    _tx(b, m, ("d", "shop.items", i103, None), ("d", "shop.orders", o12, None), ("d", "shop.customers", c3, None))

    records = b.as_records()
    e = ApplyEngine("src", target, TableMap.from_config(ApplyConfig(source="src", target=target.name))).start()
    for batch_id, part in enumerate((records[:seeded], records[seeded:])):
        if entry == "arrow":  # the job's way in (the columnar path first)
            e.apply_arrow(Batch.from_records(part).table, batch_id)
        else:
            e.apply_records(part, batch_id)

    for table, cols in (("customers", CUSTOMERS), ("orders", ORDERS), ("items", ITEMS), ("categories", CATEGORIES)):
        assert _rows(target, table, cols) == _want(m, table, cols), table
    assert _dead_letters(target) == 0
    progress = target.read_progress("src")
    target.commit()
    assert progress.last_sequence == records[-1].sequence


def test_row_that_fails_in_stream_order_is_dead_lettered_alone(target):
    """An order of a customer the target does not hold fails in stream order too: it alone is the bad row
    (dead-lettered); the children-first delete in the same batch still applies."""
    b = (StreamBuilder().schema("shop.customers", CUSTOMERS, ["id"]).schema("shop.orders", ORDERS, ["id"])
         .schema("shop.items", ITEMS, ["id"]).schema("shop.categories", CATEGORIES, ["id"]))
    m = Model()
    c1 = {"id": 1, "email": "a@x", "name": "ann"}
    o10 = {"id": 10, "customer_id": 1, "note": "n10"}
    i100 = {"id": 100, "order_id": 10, "position": 1, "sku": "s100"}
    _tx(b, m, ("c", "shop.customers", None, c1), ("c", "shop.orders", None, o10), ("c", "shop.items", None, i100))
    seeded = len(b.items)
    _tx(b, m, ("d", "shop.items", i100, None), ("d", "shop.orders", o10, None))
    orphan = {"id": 11, "customer_id": 99, "note": "orphan"}
    b.tx(("c", "shop.orders", None, orphan))  # not in the model: the target cannot hold it
    records = b.as_records()
    e = ApplyEngine("src", target, TableMap.from_config(ApplyConfig(source="src", target=target.name))).start()
    e.apply_records(records[:seeded], 0)
    result = e.apply_records(records[seeded:], 1)
    assert result.dead_letters == 1
    assert _rows(target, "orders", ORDERS) == _want(m, "orders", ORDERS) == []
    assert _rows(target, "items", ITEMS) == []
    cur = target.execute(f"SELECT sequence, source_table FROM {target.qualified('cdc_dead')}")
    dead = cur.fetchall()
    target.commit()
    assert [(int(s), t) for s, t in dead] == [(records[-2].sequence, "shop.orders")]
    assert target.read_progress("src").last_sequence == records[-1].sequence
    target.commit()


def _engine(t) -> ApplyEngine:
    return ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target=t.name))).start()


@pytest.mark.parametrize("entry", ["records", "arrow"])
def test_unique_value_taken_by_a_new_row_is_never_merged(unique_target, entry):
    """Two rows exchanging a unique e-mail inside one batch, one of them new in it (touched first), and a new row
    taking the e-mail of a row deleted earlier in the batch. MySQL's ON DUPLICATE KEY UPDATE fired on the
    e-mail and overwrote the other row (the new row lost, its values under the other row's key, no error);
    now every kind refuses that collision and the stream-order retry applies the batch whole."""
    t = unique_target
    b = StreamBuilder().schema("shop.customers", CUSTOMERS, ["id"])
    m = Model()
    c1, c2 = {"id": 1, "email": "a@x", "name": "ann"}, {"id": 2, "email": "b@x", "name": "bob"}
    c4 = {"id": 4, "email": "d@x", "name": "dan"}
    cuts = []  # each scenario is a batch of its own (an error in one cannot hide another's silent merge)
    _tx(b, m, ("c", "shop.customers", None, c1), ("c", "shop.customers", None, c2), ("c", "shop.customers", None, c4))
    cuts.append(len(b.items))
    # a new customer 3 is made first, then takes ann's e-mail once ann moved to another one
    c3 = {"id": 3, "email": "tmp@x", "name": "cy"}
    c1b, c3b = {**c1, "email": "new@x"}, {**c3, "email": "a@x"}
    _tx(b, m, ("c", "shop.customers", None, c3), ("u", "shop.customers", c1, c1b), ("u", "shop.customers", c3, c3b))
    cuts.append(len(b.items))
    # bob and ann exchange e-mails through a temporary value (both rows exist)
    c2t, c1c, c2b = {**c2, "email": "t2@x"}, {**c1b, "email": "b@x"}, {**c2, "email": "new@x"}
    _tx(b, m, ("u", "shop.customers", c2, c2t), ("u", "shop.customers", c1b, c1c), ("u", "shop.customers", c2t, c2b))
    cuts.append(len(b.items))
    # dan is deleted and a new customer 5 takes his e-mail; 5 was touched before dan's delete
    c5 = {"id": 5, "email": "e@x", "name": "eve"}
    c5b = {**c5, "email": "d@x"}
    _tx(b, m, ("c", "shop.customers", None, c5), ("d", "shop.customers", c4, None), ("u", "shop.customers", c5, c5b))
    records = b.as_records()
    e = _engine(t)
    for batch_id, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(records)])):
        part = records[lo:hi]
        if entry == "arrow":
            e.apply_arrow(Batch.from_records(part).table, batch_id)
        else:
            e.apply_records(part, batch_id)
    assert _rows(t, "customers", CUSTOMERS) == _want(m, "customers", CUSTOMERS) == [
        (1, "b@x", "ann"), (2, "new@x", "bob"), (3, "a@x", "cy"), (5, "d@x", "eve")]
    assert _dead_letters(t) == 0
    assert t.read_progress("src").last_sequence == records[-1].sequence
    t.commit()


def test_real_unique_collision_is_the_bad_row(unique_target):
    """A new row whose e-mail a row the source never touched holds (the target differs from the source): it
    fails in stream order too and is dead-lettered alone; the other row keeps its values."""
    t = unique_target
    b = StreamBuilder().schema("shop.customers", CUSTOMERS, ["id"])
    m = Model()
    c1 = {"id": 1, "email": "a@x", "name": "ann"}
    _tx(b, m, ("c", "shop.customers", None, c1))
    seeded = len(b.items)
    c2 = {"id": 2, "email": "b@x", "name": "bob"}
    _tx(b, m, ("c", "shop.customers", None, c2))
    b.tx(("c", "shop.customers", None, {"id": 3, "email": "a@x", "name": "intruder"}))  # not in the model
    records = b.as_records()
    e = _engine(t)
    e.apply_records(records[:seeded], 0)
    result = e.apply_records(records[seeded:], 1)
    assert result.dead_letters == 1
    assert _rows(t, "customers", CUSTOMERS) == _want(m, "customers", CUSTOMERS) == [(1, "a@x", "ann"),
                                                                                  (2, "b@x", "bob")]


@pytest.mark.parametrize("entry", ["records", "arrow"])
def test_foreign_keys_order_the_writes_without_a_retry(target, entry):
    """The engine reads the target's foreign keys (SqlTarget.foreign_keys) and writes deletes children first,
    upserts parents first, and the self-referencing category tree in stream order: the foreign-key cases
    apply on the first try, the stream-order pass never runs (it ran for each of these batches before)."""
    b = (StreamBuilder().schema("shop.items", ITEMS, ["id"]).schema("shop.orders", ORDERS, ["id"])
         .schema("shop.customers", CUSTOMERS, ["id"]).schema("shop.categories", CATEGORIES, ["id"]))
    m = Model()
    c1 = {"id": 1, "email": "a@x", "name": "ann"}
    o10, o11 = {"id": 10, "customer_id": 1, "note": "n10"}, {"id": 11, "customer_id": 1, "note": "n11"}
    i100 = {"id": 100, "order_id": 10, "position": 1, "sku": "s100"}
    i102 = {"id": 102, "order_id": 11, "position": 1, "sku": "s102"}
    k1, k2 = {"id": 1, "parent_id": None, "name": "root"}, {"id": 2, "parent_id": 1, "name": "mid"}
    k3 = {"id": 3, "parent_id": 2, "name": "leaf"}
    # parents first in the source; the batch touches the children's tables first (item, order, customer)
    _tx(b, m, ("c", "shop.customers", None, c1), ("c", "shop.orders", None, o10), ("c", "shop.orders", None, o11),
        ("c", "shop.items", None, i100), ("c", "shop.items", None, i102),
        ("c", "shop.categories", None, k1), ("c", "shop.categories", None, k2), ("c", "shop.categories", None, k3))
    seeded = len(b.items)
    _tx(b, m, ("d", "shop.items", i102, None), ("d", "shop.orders", o11, None))  # children first
    c3 = {"id": 3, "email": "c@x", "name": "cy"}
    o12 = {"id": 12, "customer_id": 3, "note": "n12"}
    i103 = {"id": 103, "order_id": 12, "position": 1, "sku": "s103"}
    _tx(b, m, ("c", "shop.customers", None, c3), ("c", "shop.orders", None, o12), ("c", "shop.items", None, i103))
    k4 = {"id": 4, "parent_id": 1, "name": "new mid"}
    _tx(b, m, ("c", "shop.categories", None, k4), ("u", "shop.categories", k3, {**k3, "parent_id": 4}),
        ("d", "shop.categories", k2, None))
    _tx(b, m, ("d", "shop.items", i100, None), ("d", "shop.orders", o10, None), ("d", "shop.customers", c1, None))
    records = b.as_records()
    e = _engine(target)
    for batch_id, part in enumerate((records[:seeded], records[seeded:])):
        if entry == "arrow":
            e.apply_arrow(Batch.from_records(part).table, batch_id)
        else:
            e.apply_records(part, batch_id)
    for table, cols in (("customers", CUSTOMERS), ("orders", ORDERS), ("items", ITEMS), ("categories", CATEGORIES)):
        assert _rows(target, table, cols) == _want(m, table, cols), table
    assert _dead_letters(target) == 0
    assert e.stream_order_passes == 0
    deferred = target.defer_sql is not None and any(fk.deferred for fk in target.foreign_keys())
    assert sorted(target.foreign_keys()) == sorted([  # PostgreSQL DEFERRABLE: deferred to the commit
        ("categories", "categories", deferred, ("parent_id",), ("id",)),
        ("items", "orders", deferred, ("order_id",), ("id",)),
        ("orders", "customers", deferred, ("customer_id",), ("id",))])


@pytest.mark.parametrize("entry", ["records", "arrow"])
def test_self_reference_writes_parents_first_by_final_values(target, entry):
    """A self-referencing table (categories.parent_id -> id) has its net rows ordered by their final values:
    a node inserted, its child inserted under it, then the node updated (its last change after its child's)
    is written parent first; a child deleted then its parent, with a grandchild re-parented in between and
    the new parent updated after (its last change after the old parent's delete), child first. The batch
    applies on the first try: the stream-order pass never runs (it ran for each of these batches before)."""
    b = StreamBuilder().schema("shop.categories", CATEGORIES, ["id"])
    m = Model()
    k1 = {"id": 1, "parent_id": None, "name": "root"}
    k2, k3 = {"id": 2, "parent_id": 1, "name": "mid"}, {"id": 3, "parent_id": 2, "name": "leaf"}
    k4 = {"id": 4, "parent_id": 3, "name": "leaf 2"}
    _tx(b, m, ("c", "shop.categories", None, k1), ("c", "shop.categories", None, k2),
        ("c", "shop.categories", None, k3), ("c", "shop.categories", None, k4))
    seeded = len(b.items)
    # insert A, its child B under A, then update A: A's last change comes after B's
    a, bb = {"id": 10, "parent_id": 1, "name": "a"}, {"id": 11, "parent_id": 10, "name": "b"}
    _tx(b, m, ("c", "shop.categories", None, a), ("c", "shop.categories", None, bb),
        ("u", "shop.categories", a, {**a, "name": "a renamed"}))
    # a new parent made, the grandchild moved under it, the leaf (child) then the middle (parent) deleted,
    # the new parent renamed last: its upsert's last change is after both deletes
    n = {"id": 20, "parent_id": 1, "name": "new"}
    _tx(b, m, ("c", "shop.categories", None, n), ("u", "shop.categories", k4, {**k4, "parent_id": 20}),
        ("d", "shop.categories", k3, None), ("d", "shop.categories", k2, None),
        ("u", "shop.categories", n, {**n, "name": "new renamed"}))
    records = b.as_records()
    e = _engine(target)
    for batch_id, part in enumerate((records[:seeded], records[seeded:])):
        if entry == "arrow":
            e.apply_arrow(Batch.from_records(part).table, batch_id)
        else:
            e.apply_records(part, batch_id)
    assert _rows(target, "categories", CATEGORIES) == _want(m, "categories", CATEGORIES) == [
        (1, None, "root"), (4, 20, "leaf 2"), (10, 1, "a renamed"), (11, 10, "b"), (20, 1, "new renamed")]
    assert _dead_letters(target) == 0
    assert e.stream_order_passes == 0
    assert target.read_progress("src").last_sequence == records[-1].sequence
    target.commit()


@pytest.mark.parametrize("entry", ["records", "arrow"])
def test_self_reference_cycle_falls_back_to_stream_order(target, entry):
    """Two rows of a batch referencing each other at its end (a true cycle) have no parents-first order: the
    batch is applied in stream order (the stream-order pass where the target checks each row), equal to the
    source."""
    b = StreamBuilder().schema("shop.categories", CATEGORIES, ["id"])
    m = Model()
    x, y = {"id": 1, "parent_id": None, "name": "x"}, {"id": 2, "parent_id": 1, "name": "y"}
    _tx(b, m, ("c", "shop.categories", None, x), ("c", "shop.categories", None, y),
        ("u", "shop.categories", x, {**x, "parent_id": 2}))
    records = b.as_records()
    e = _engine(target)
    if entry == "arrow":
        e.apply_arrow(Batch.from_records(records).table, 0)
    else:
        e.apply_records(records, 0)
    assert _rows(target, "categories", CATEGORIES) == _want(m, "categories", CATEGORIES) == [
        (1, 2, "x"), (2, 1, "y")]
    assert _dead_letters(target) == 0
    assert e.stream_order_passes == (0 if any(fk.deferred for fk in target.foreign_keys()) else 1)
