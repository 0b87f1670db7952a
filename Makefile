# The two commands a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
CDC := $(VENV)/bin/cdc
PYTEST_ARGS ?=

.PHONY: setup system-deps mysql-deps container-deps venv demo demo-oracle test test-unit test-integration test-deploy bench lint clean

setup: system-deps mysql-deps venv

# Distribution packages the embedded services need; installed only when missing.
system-deps:
	@bash deploy/install-system-deps.sh

# A private MySQL 9.7 (Debian sid's packages, unpacked under ~/.cache/cdc-mysql97) for the MySQL
# test tier; the host's packages are not touched. Cached: does nothing once present.
mysql-deps:
	@bash deploy/install-mysql97.sh

# docker.io and debootstrap, for the container test (make test-deploy) only
container-deps:
	@bash deploy/install-container-deps.sh

venv: $(VENV)/.installed

# The distribution's python3 when there is one: Debian's (like the official Docker images the
# deploy/Dockerfile uses) is built with PGO + LTO, ~25% faster on our per-row paths than a plain
# source build such as pyenv's.
$(VENV)/.installed: pyproject.toml readers/oracle/columnar/_redo_native.c readers/mysql/binlog/_rows_native.c readers/mysql/binlog/_sha256.h readers/mysql/binlog/_events_native.c readers/mysql/_snapshot_native.c cdc/publish/_splice_native.c streaming/stream/_scan_native.c
	@test -x $(PY) || $$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3 ) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev]'
	@touch $@

demo: setup
	$(CDC) dev demo

demo-oracle: setup
	$(CDC) dev demo --oracle

# the whole suite over three pytest-xdist workers, whole files handed to the free one, e2e first (tests/run_suite.sh)
test: setup
	PY=$(PY) bash tests/run_suite.sh $(PYTEST_ARGS)

test-unit: setup
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

test-integration: setup
	$(PY) -m pytest tests/integration tests/e2e $(PYTEST_ARGS)

# The product's image built on a local Debian base and run as the daemon and the apply job
# (tests/deploy; marker deploy, which `make test` leaves out). The base image and the wheels are
# cached under ~/.cache/cdc-deploy (CDC_DEPLOY_CACHE).
test-deploy: setup container-deps
	$(PY) -m pytest -m deploy tests/deploy $(PYTEST_ARGS)

# exactly the commands of docs/performance.md's table, in its order (tests/unit/cdc/test_docs.py checks it)
# each documented command's JSON line kept in docs/bench/NAME.json (command, host, date, result), then the
# pages' figures rendered from those files (cdc/dev/bench_figures.py)
BENCH_RECORD = $(PY) -m cdc.dev.bench_figures record

bench: setup
	$(BENCH_RECORD) mysql-big -- $(CDC) bench mysql --rows 1000000 --native-only
	$(BENCH_RECORD) mysql-small -- $(CDC) bench mysql --rows 50000 --txn-rows 5
	$(BENCH_RECORD) mysql-oltp1 -- $(CDC) bench mysql --rows 20000 --txn-rows 1 --mix --native-only
	$(BENCH_RECORD) mysql-oltp5 -- $(CDC) bench mysql --rows 20000 --txn-rows 5 --mix --native-only
	$(BENCH_RECORD) mysql-oltp1-instructions -- $(CDC) bench mysql --rows 3000 --txn-rows 1 --mix --native-only --repeat 1 --instructions
	$(BENCH_RECORD) mysql-oltp5-instructions -- $(CDC) bench mysql --rows 15000 --txn-rows 5 --mix --native-only --repeat 1 --instructions
	$(BENCH_RECORD) mysql-transforms -- $(CDC) bench mysql --rows 200000 --native-only --transforms
	$(BENCH_RECORD) oltp -- $(CDC) bench oltp --ops 1000000 --steady-rate 5000 --steady-s 20
	$(BENCH_RECORD) ddl -- $(CDC) bench ddl --rows 200000
	$(BENCH_RECORD) oracle -- $(CDC) bench oracle --rows 1000000
	$(BENCH_RECORD) oracle-big-txn -- $(CDC) bench oracle --big-txn 1000000
	$(BENCH_RECORD) apply -- $(CDC) bench apply --rows 500000
	$(BENCH_RECORD) apply-transforms -- $(CDC) bench apply --rows 200000 --transforms
	$(BENCH_RECORD) apply-delta -- $(CDC) bench apply --target delta --rows 500000
	$(BENCH_RECORD) apply-iceberg -- $(CDC) bench apply --target iceberg --rows 500000
	$(BENCH_RECORD) compare -- $(CDC) bench compare --rows 1000000
	$(BENCH_RECORD) views -- $(CDC) bench views
	$(BENCH_RECORD) snapshot -- $(CDC) bench snapshot --rows 200000 --server mysql97
	$(BENCH_RECORD) snapshot-mariadb -- $(CDC) bench snapshot --rows 200000 --server mariadb
	$(PY) -m cdc.dev.bench_figures render

lint: setup
	$(VENV)/bin/ruff check cdc readers streaming tests

clean:
	rm -rf $(VENV) .cdc-dev .pytest_cache
