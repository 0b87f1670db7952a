"""Delta's Arrow type of a source column's logical type (streaming.targets.lake_types: the shared table;
Delta has a short)."""

from __future__ import annotations

import pyarrow as pa

from cdc.schema.logical import LogicalType
from streaming.targets.lake_types import logical_arrow


def arrow_type(lt: LogicalType) -> pa.DataType:
    return logical_arrow(lt, pa.int16())
