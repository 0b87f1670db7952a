"""``sources[].transforms``: how a source's rows are shaped before anything reaches Kafka.

.. code-block:: yaml

    sources:
      - name: shop
        kind: mysql
        transforms:
          hash_key_file: /etc/cdc/hash.key          # HMAC key (read at start, never logged)
          encryption_key_file: /etc/cdc/aes.key     # 64 hex characters: an AES-256 key
          tables:
            - match: shop.customers                 # a db.table glob; the first rule that matches wins
              exclude: [internal_notes]             # or include: [id, email, ...]
              columns:
                email: {mask: hash}
                name: {mask: truncate, length: 1}
                card: {mask: keep_last, length: 4}
                ssn: {mask: encrypt}
                comment: {mask: replace, value: "(removed)"}
                phone: {mask: "null"}

A rule whose ``match`` names one table (no glob character) requires every column it names: a column the
table does not have (any more) stops the source with the way back. A glob rule shapes the columns each
matched table has.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cdc.schema.table_glob import check_pattern


class _Mask(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HashMask(_Mask):
    mask: Literal["hash"] = Field(description="hash: HMAC-SHA256 of the value under hash_key_file, 64 hex "
                                  "characters; deterministic, so keys, joins and compare still work")


class EncryptMask(_Mask):
    mask: Literal["encrypt"] = Field(description="encrypt: AES-256-GCM under encryption_key_file, "
                                     "'aesgcm1:' + base64; `cdc decrypt` reverses it; never on a key column")


class TruncateMask(_Mask):
    mask: Literal["truncate"] = Field(description="truncate: the first `length` characters")
    length: int = Field(ge=0, description="characters kept")


class KeepLastMask(_Mask):
    mask: Literal["keep_last"] = Field(description="keep_last: every character but the last `length` "
                                       "replaced by '*'")
    length: int = Field(ge=0, description="characters kept at the end")


class ReplaceMask(_Mask):
    mask: Literal["replace"] = Field(description="replace: the fixed `value` (NULL stays NULL)")
    value: str = Field(description="the text every non-NULL value becomes")


class NullMask(_Mask):
    mask: Literal["null"] = Field(description="null: every value becomes NULL")


ColumnMask = Annotated[HashMask | EncryptMask | TruncateMask | KeepLastMask | ReplaceMask | NullMask,
                       Field(discriminator="mask")]


class ComputedColumn(BaseModel):
    """A column the daemon adds, computed from the clear source row."""

    model_config = ConfigDict(extra="forbid")

    expr: str = Field(description="SQL expression (MySQL spelling, docs/transforms.md) over the clear source "
                      "columns; NULL gives NULL")
    type: str = Field(description="the column's type, in the source's spelling: varchar(N)/char(N)/text, "
                      "tinyint..bigint, or decimal(P,S)")

    @model_validator(mode="after")
    def _valid(self) -> ComputedColumn:
        from cdc.transforms.errors import TransformError
        from cdc.transforms.expressions import Expression

        try:
            Expression(self.expr, "computed column expr")
        except TransformError as exc:
            raise ValueError(str(exc)) from None
        return self  # its type is checked by the source kind's config (readers/<kind>/config.py: check_computed)


COMPUTED_FAMILIES = frozenset({"string", "integer", "decimal"})


def check_computed(transforms: TransformsConfig | None, logical_type: Any) -> None:
    """Every computed column's ``type`` read by the source kind's ``logical_type`` parser is a string, integer or
    decimal; ValueError naming the column otherwise (called by the source kind's config validator)."""
    for rule in transforms.tables if transforms else ():
        for name, cc in rule.computed.items():
            family = logical_type(cc.type).family
            if family not in COMPUTED_FAMILIES:
                raise ValueError(f"transforms: computed column {name} type {cc.type!r} is a {family}; a computed "
                                 f"column is one of {', '.join(sorted(COMPUTED_FAMILIES))} (e.g. varchar(64), "
                                 "bigint, decimal(12,2))")


class TableTransform(BaseModel):
    """One rule: the tables it matches and what it does to their columns."""

    model_config = ConfigDict(extra="forbid")

    match: str = Field(description="db.table glob (cdc/schema/table_glob.py) of the tables this rule shapes; "
                       "the first matching rule of the list applies")
    include: list[str] | None = Field(default=None, description="only these columns move (the primary key "
                                      "columns must be among them); none: every column")
    exclude: list[str] = Field(default_factory=list, description="columns that never leave the daemon "
                               "(not a primary key column)")
    columns: dict[str, ColumnMask] = Field(default_factory=dict, description="column name -> its mask")
    computed: dict[str, ComputedColumn] = Field(default_factory=dict, description="column name -> a column "
                                                "the daemon adds after the moved ones, computed from the clear row")
    filter: str | None = Field(default=None, description="only rows for which this SQL expression (MySQL "
                               "spelling, over the clear source columns; docs/transforms.md) is TRUE move; an "
                               "update leaving it is a delete, one entering it an insert")
    filter_function: str | None = Field(default=None, description="'package.module:function' called with the "
                                        "clear row (a dict) instead of `filter`: the row moves when it returns "
                                        "True; `cdc compare` refuses such a table")

    @field_validator("match")
    @classmethod
    def _pattern(cls, pattern: str) -> str:
        return check_pattern(pattern)

    @model_validator(mode="after")
    def _consistent(self) -> TableTransform:
        if self.include is not None and self.exclude:
            raise ValueError(f"rule {self.match!r}: give include or exclude, not both")
        if self.filter is not None and self.filter_function is not None:
            raise ValueError(f"rule {self.match!r}: give filter or filter_function, not both")
        if self.filter is not None:  # parsed now: a bad expression stops the config load
            from cdc.transforms.errors import TransformError
            from cdc.transforms.expressions import Expression

            try:
                Expression(self.filter, f"rule {self.match!r} filter")
            except TransformError as exc:
                raise ValueError(str(exc)) from None
        if self.filter_function is not None and not re.fullmatch(r"[\w.]+:\w+", self.filter_function):
            raise ValueError(f"rule {self.match!r}: filter_function {self.filter_function!r} is not "
                             "'package.module:function'")
        dropped = set(self.exclude) | (set() if self.include is None else set(self.columns) - set(self.include))
        both = sorted(dropped & set(self.columns))
        if both:
            raise ValueError(f"rule {self.match!r}: column(s) {', '.join(both)} are masked and not moved; "
                             "remove them from columns or from include/exclude")
        return self


class TransformsConfig(BaseModel):
    """``sources[].transforms``: the key files and the rules, applied in the daemon before publishing."""

    model_config = ConfigDict(extra="forbid")

    hash_key_file: str | None = Field(default=None, description="file holding the HMAC key of `mask: hash` "
                                      "(at least 16 bytes; read at start, never logged)")
    encryption_key_file: str | None = Field(default=None, description="file holding the AES-256 key of "
                                            "`mask: encrypt` as 64 hex characters")
    tables: list[TableTransform] = Field(default_factory=list, description="the rules, first match wins")

    @model_validator(mode="after")
    def _keys_given(self) -> TransformsConfig:
        masks = {m.mask for rule in self.tables for m in rule.columns.values()}
        if "hash" in masks and not self.hash_key_file:
            raise ValueError("a column has `mask: hash`: give transforms.hash_key_file")
        if "encrypt" in masks and not self.encryption_key_file:
            raise ValueError("a column has `mask: encrypt`: give transforms.encryption_key_file")
        return self


class OutboxColumns(BaseModel):
    """The outbox table's column names (Debezium's defaults)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default="id", description="the event's id: header `id` of the routed record")
    aggregatetype: str = Field(default="aggregatetype", description="names the topic ({aggregatetype} of "
                               "`topic`); NULL is a bad row")
    aggregateid: str = Field(default="aggregateid", description="the routed record's key (as text; NULL: no key)")
    type: str = Field(default="type", description="the event type: header `type` of the routed record")
    payload: str = Field(default="payload", description="the routed record's value, as-is: text as UTF-8 (JSON "
                         "text stays JSON text), a binary column as its bytes; NULL: a tombstone")


class OutboxConfig(BaseModel):
    """``sources[].outbox``: Debezium's outbox pattern, routed in the daemon exactly once (docs/transforms.md)."""

    model_config = ConfigDict(extra="forbid")

    table: str = Field(description="db.table of the outbox table (no glob); only its INSERTs are routed")
    topic: str = Field(default="outbox.event.{aggregatetype}", description="topic of an event: {aggregatetype} "
                       "is the row's aggregate type, {prefix} kafka.topic_prefix, {source} the source's name; "
                       "the result must be a valid topic name ([A-Za-z0-9._-], at most 249 characters)")
    columns: OutboxColumns = Field(default_factory=OutboxColumns, description="the outbox table's column names")
    headers: dict[str, str] = Field(default_factory=dict, description="more headers: column name -> header name "
                                    "(the column's value as text; NULL: no header)")
    keep_in_stream: bool = Field(default=True, description="the outbox table's rows also go to the change stream "
                                 "(and per-table topics) as any table's; false: only to the outbox topics")
    partitions: int = Field(default=1, ge=1, description="partitions of an outbox topic the daemon creates (keyed "
                            "by aggregate id: one aggregate's events stay in order in any number)")

    @field_validator("table")
    @classmethod
    def _one_table(cls, table: str) -> str:
        parts = table.split(".")
        if len(parts) != 2 or not all(parts) or any(ch in table for ch in "*?[]"):
            raise ValueError(f"outbox table {table!r} is not db.table (one table, no glob)")
        return table

    @field_validator("topic")
    @classmethod
    def _pattern(cls, topic: str) -> str:
        try:
            sample = topic.format(aggregatetype="a", prefix="p", source="s")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"outbox topic {topic!r}: unknown or bad placeholder ({exc}); use {{aggregatetype}}, "
                             "{prefix}, {source}") from None
        if "{aggregatetype}" not in topic or topic == "{aggregatetype}":
            raise ValueError(f"outbox topic {topic!r} must hold {{aggregatetype}} and some fixed text (the daemon "
                             "finds its outbox topics by that text when it restarts)")
        if not re.fullmatch(r"[A-Za-z0-9._-]+", sample):
            raise ValueError(f"outbox topic {topic!r} gives an invalid topic name ({sample!r})")
        return topic
