"""Suite-wide policy and the fixture plugins (one line per area in ``pytest_plugins``).

Policy: a skipped test fails the run. The project forbids silently skipped
tiers (a service that cannot start must fail loudly, not skip), so any skip
turns the exit status non-zero and the summary says which tests and why.
"""

from __future__ import annotations

import pytest

pytest_plugins = [
    "tests.fixtures.spark",
    "tests.fixtures.prometheus",
    "tests.fixtures.services",
    "tests.fixtures.tls",
    "tests.fixtures.disks",
]

_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skipped.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _skipped and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if _skipped:
        terminalreporter.section("skipped tests fail the run", sep="=", red=True, bold=True)
        terminalreporter.line("This project forbids skipped tests (a tier that cannot run must fail loudly).")
        for line in _skipped:
            terminalreporter.line(f"SKIPPED {line}", red=True)
