from __future__ import annotations

import pytest

from cdc.consumer import Position
from cdc.errors import CdcError


def test_positions_print_parse_and_order_by_sequence():
    p = Position(1234, 5678)
    assert str(p) == "1234@5678" and Position.parse(str(p)) == p
    assert Position.from_json(p.to_json()) == p
    assert Position(5, 100) < Position(6, 7)


@pytest.mark.parametrize("text", ["", "12", "a@b", "12@0", "-1@4"])
def test_a_bad_position_names_the_value(text):
    with pytest.raises(CdcError, match="not a stream position"):
        Position.parse(text)
