"""cdc.bench.instructions: instructions per transaction from two valgrind runs (over the first third and over
all transactions of the same binlog); what it refuses, with the reason."""

from __future__ import annotations

import pytest

from cdc.bench import instructions
from cdc.errors import CdcError


def test_one_more_transaction_is_the_difference_of_the_two_runs(monkeypatch):
    runs = []

    def count(stage, address, start, end, bootstrap):
        runs.append((stage, start, end, bootstrap))
        seq = int(end.rsplit("-", 1)[1])
        return 5_000_000 + 1_000 * (seq - 9)  # start-up, then 1,000 a transaction

    monkeypatch.setattr(instructions, "count", count)
    assert instructions.per_transaction("pipeline", "h:1", "0-77-9", "0-77-309", "b:2") == 1_000
    assert runs == [("pipeline", "0-77-9", "0-77-109", "b:2"), ("pipeline", "0-77-9", "0-77-309", "b:2")]


@pytest.mark.parametrize("start, end", [("0-77-9", "0-78-300"), ("0-77-9", "1-77-300"), ("0-77-9", "0-77-11"),
                                        ("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", "0-77-300"),
                                        ("0-77-9,1-77-3", "0-77-300")])
def test_it_needs_one_mariadb_domain_and_server_and_some_transactions(start, end):
    with pytest.raises(CdcError, match="--instructions needs"):
        instructions.per_transaction("reader", "h:1", start, end, None)


def test_without_valgrind_it_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    with pytest.raises(CdcError, match="apt-get install valgrind"):
        instructions.count("reader", "h:1", "0-77-9", "0-77-300", None)


def test_the_child_refuses_a_stage_it_does_not_know(capsys):
    from cdc.bench.mysql import stage_main

    assert stage_main(["decode", "h:1", "0-77-9", "0-77-300"]) == 2
    assert stage_main(["pipeline", "h:1", "0-77-9", "0-77-300"]) == 2  # the pipeline needs a broker
    assert stage_main(["reader", "h:1"]) == 2
    assert "usage" in capsys.readouterr().err
