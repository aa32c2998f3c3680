# Eco Insights — every target uses the release profile, so Polars is compiled once.
CARGO ?= cargo
BIN := $(or $(CARGO_TARGET_DIR),target)/release/eco-insights
SAMPLE_ROWS := 12000
SAMPLE_SEED := 2026
# Python venv of the contract tests (git-ignored).
VENV := .venv
PYTHON ?= python3

# Longer runs of the untrusted-export property tests (tests/api/untrusted.rs): FUZZ_CASES mutated
# copies per real export (default 5000), FUZZ_SEED to explore other inputs than make test's.
FUZZ_CASES ?= 5000
FUZZ_SEED ?= 1000000

.PHONY: run build test unit contract data sample fmt lint bench soak fuzz sql-test pg-test doors-test flight-test s3-test cluster cluster-test report report-test formats-test ui-test docs-test help

help:
	@echo "make run    build and serve data/catalog.parquet on 127.0.0.1:8080 (demo credentials)"
	@echo "make test   unit, black-box API and contract tests"
	@echo "make contract  schemathesis against the live service (every check; venv in $(VENV)/)"
	@echo "make data   import the official PBEV tables (data/pbev/*.pdf) into data/catalog.parquet"
	@echo "make sample write the synthetic catalog instead (SAMPLE_ROWS rows, fixed seed) for scale tests"
	@echo "make bench  side-by-side benchmark: the service, a static ceiling and DuckDB (BENCH_SIZES=12000 for a quick run, BENCH_SIZES=10000000 for the 10M-row stretch, BENCH_CORES=2,4,8 for the service pinned to N cores)"
	@echo "make soak   bounded soak: steady load + a data swap every 5 s on a 100k catalog (SOAK_SECONDS=60)"
	@echo "make cluster  3 replicas behind nginx on 127.0.0.1:8090, one shared data folder (CLUSTER_REPLICAS, CLUSTER_PORT)"
	@echo "make cluster-test  same answers/ETags on every replica, a swap converges, SIGTERM of one replica costs no request"
	@echo "make report the analyst report of the bundled sample: report.html (REPORT_DATA, REPORT_OUT)"
	@echo "make report-test  render the sample's report with headless Chromium and check it is not blank"
	@echo "make ui-test  the explorer (/explore) in headless Chromium: sign-in, facets, sort, cursor, vehicle, comparison, SQL, axe-core, screenshots in target/ui/"
	@echo "make sql-test  analysts' SQL over HTTP compared with a real PostgreSQL server on the same export"
	@echo "make pg-test   the PostgreSQL front door with psycopg, psql, pgjdbc, pandas/SQLAlchemy and connectorx, compared with DuckDB"
	@echo "make doors-test  hostile sessions against the PostgreSQL and Flight SQL doors from a fixed seed: no panic, hang, bare close or growth"
	@echo "make flight-test  the Arrow Flight SQL door with ADBC (pyarrow, Polars, pandas), compared with a real PostgreSQL server"
	@echo "make s3-test   exports pulled from a real S3-API server (moto, started by the test): swaps, outages, replicas"
	@echo "make formats-test  every list operation and the export in every format, read back with pandas, Polars and DuckDB"
	@echo "make docs-test  run the marked examples of README.md and docs/ against the binary; every --help flag in docs/operators.md"
	@echo "make fuzz   mutated exports fed to the decoder and every command, mutated PBEV tables to the importer (FUZZ_CASES=5000, FUZZ_SEED)"
	@echo "make fmt    format the code;  make lint  formatting check + clippy"

build:
	$(CARGO) build --release --locked

run: build
	$(BIN) serve

test:
	$(CARGO) test --release --locked
	$(MAKE) contract
	$(MAKE) cluster-test
	$(MAKE) formats-test
	$(MAKE) sql-test
	$(MAKE) pg-test
	$(MAKE) doors-test
	$(MAKE) flight-test
	$(MAKE) s3-test
	$(MAKE) report-test
	$(MAKE) ui-test
	$(MAKE) docs-test

fuzz:
	FUZZ_CASES=$(FUZZ_CASES) FUZZ_SEED=$(FUZZ_SEED) $(CARGO) test --release --locked --test api untrusted::mutated -- --nocapture
	FUZZ_CASES=$$(( $(FUZZ_CASES) / 20 + 1 )) FUZZ_SEED=$(FUZZ_SEED) $(CARGO) test --release --locked --test api untrusted::every_command -- --nocapture
	FUZZ_CASES=$(FUZZ_CASES) FUZZ_SEED=$(FUZZ_SEED) $(CARGO) test --release --locked --test api pbev::mutated -- --nocapture

# The default catalog: INMETRO's official tables, exactly as published, imported (API-CONTRACT §8).
PBEV_PDFS := $(sort $(wildcard data/pbev/*.pdf))

data: build
	$(BIN) import pbev --out data/catalog.parquet --marcas data/pbev/marcas.toml $(PBEV_PDFS)

# The synthetic catalog (for scale: make bench and the tests generate their own).
sample: build
	$(BIN) generate --rows $(SAMPLE_ROWS) --seed $(SAMPLE_SEED) --out data/catalog.parquet

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --all-targets --locked -- -D warnings

# Side-by-side benchmark (bench/run.py): the service, a static axum ceiling and DuckDB on the same
# generated catalogs (12k/100k/1M rows, cached in target/bench/data). BENCH_SIZES=12000 for a
# quick run; BENCH_SIZES=10000000 for the 10M-row stretch (about 10 minutes the first time, two
# 460 MB catalogs generated, some 11 GB of memory at the peak of its swap). Loopback only, every
# load bounded; prints a table, writes target/bench/results.json.
BENCH_VENV := .venv-bench
CEILING := $(or $(CARGO_TARGET_DIR),target)/release/examples/ceiling

bench: build $(BENCH_VENV)/.installed
	command -v wrk >/dev/null || apt-get install -y wrk || (apt-get update && apt-get install -y wrk)
	command -v pdftotext >/dev/null || apt-get install -y poppler-utils || (apt-get update && apt-get install -y poppler-utils)
	$(CARGO) build --release --locked --example ceiling
	$(BENCH_VENV)/bin/python bench/run.py --binary $(BIN) --ceiling $(CEILING)

# Soak (bench/soak.py, Python standard library only): the release binary on a generated 100k
# catalog (cached in target/soak), steady load from keep-alive clients on loopback, the data file
# replaced every 5 s; fails on any failed request or RSS growth over 15 % after warm-up.
SOAK_SECONDS ?= 60

soak: build
	$(PYTHON) bench/soak.py --binary $(BIN) --seconds $(SOAK_SECONDS)

# Many replicas behind nginx (tests/cluster/cluster.py, Python standard library only): N replicas
# of the release binary on one shared data folder under target/cluster, nginx as the current user
# with a generated configuration (the production one is deploy/nginx.conf). nginx is installed
# from the Debian package when missing; if that fails, the target fails.
NGINX_INSTALL = command -v nginx >/dev/null || apt-get install -y nginx || (apt-get update && apt-get install -y nginx)

cluster: build
	$(NGINX_INSTALL)
	$(PYTHON) tests/cluster/cluster.py serve --binary $(BIN)

cluster-test: build
	$(NGINX_INSTALL)
	$(PYTHON) tests/cluster/cluster.py test --binary $(BIN)

$(BENCH_VENV)/.installed: bench/requirements.txt
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --no-input --disable-pip-version-check -r bench/requirements.txt
	touch $@

# Property-based contract tests: schemathesis (pinned in tests/contract/requirements.txt,
# installed into $(VENV)/) against the release binary serving the bundled sample.
contract: build $(VENV)/.contract-installed
	BIN=$(BIN) VENV=$(VENV) SAMPLE_ROWS=$(SAMPLE_ROWS) SAMPLE_SEED=$(SAMPLE_SEED) tests/contract/run.sh

$(VENV)/.contract-installed: tests/contract/requirements.txt
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --no-input --disable-pip-version-check -r tests/contract/requirements.txt
	touch $@

# The analyst report (src/report/): one self-contained HTML page of a catalog, written
# atomically; the command prints how long it took. REPORT_DATA=target/report-1m.parquet for a
# generated 1M-row catalog (eco-insights generate --rows 1000000 --out target/report-1m.parquet).
REPORT_DATA ?= data/catalog.parquet
REPORT_OUT ?= report.html

report: build
	$(BIN) report --data $(REPORT_DATA) --out $(REPORT_OUT)

# Headless Chromium (the Debian package, installed when missing) renders the sample's report to
# a PNG that must not be blank (tests/report/render.sh). Output in target/report/.
CHROMIUM_INSTALL = command -v chromium >/dev/null || apt-get install -y chromium || (apt-get update && apt-get install -y chromium)

report-test: build
	$(CHROMIUM_INSTALL)
	$(BIN) report --data data/catalog.parquet --out target/report/report.html
	tests/report/render.sh target/report/report.html target/report/report.png

# The explorer (/explore) as an analyst uses it (tests/ui/explore.py): Debian's chromium and
# chromium-driver (installed when missing) driven by Selenium (pinned in tests/ui/requirements.txt,
# installed into $(UI_VENV)/) against the release binary on the bundled sample and on a hostile
# export the test writes; axe-core (npm, pinned, installed into $(UI_OUT)/node_modules) is
# injected into every page. Screenshots of each page in $(UI_OUT)/.
UI_VENV := .venv-ui
UI_OUT := $(or $(CARGO_TARGET_DIR),target)/ui
AXE_CORE_VERSION := 4.14.1
CHROMEDRIVER_INSTALL = command -v chromedriver >/dev/null || apt-get install -y chromium chromium-driver || (apt-get update && apt-get install -y chromium chromium-driver)

ui-test: build $(UI_VENV)/.installed $(UI_OUT)/node_modules/axe-core/axe.min.js
	$(CHROMIUM_INSTALL)
	$(CHROMEDRIVER_INSTALL)
	$(UI_VENV)/bin/python tests/ui/explore.py --binary $(BIN) --out $(UI_OUT) --axe $(UI_OUT)/node_modules/axe-core/axe.min.js

$(UI_VENV)/.installed: tests/ui/requirements.txt
	test -x $(UI_VENV)/bin/python || $(PYTHON) -m venv $(UI_VENV)
	$(UI_VENV)/bin/python -m pip install --quiet --no-input --disable-pip-version-check -r tests/ui/requirements.txt
	touch $@

$(UI_OUT)/node_modules/axe-core/axe.min.js:
	command -v npm >/dev/null || apt-get install -y npm || (apt-get update && apt-get install -y npm)
	mkdir -p $(UI_OUT)
	npm install --prefix $(UI_OUT) --no-save --no-audit --no-fund --silent axe-core@$(AXE_CORE_VERSION)
	test -s $@
# Read-back of the answer formats (tests/formats/readback.py): the release binary on a generated
# catalog; each list operation and the export fetched in CSV, Parquet, Arrow and NDJSON, read with
# pandas, Polars and DuckDB (pinned in tests/formats/requirements.txt, installed into
# $(FORMATS_VENV)/) and compared with the JSON answer. Exits non-zero on any mismatch.
FORMATS_VENV := .venv-formats

# The PostgreSQL front door with the clients analysts use (tests/pg/): psql (Debian's
# postgresql-client), pgjdbc (libpostgresql-jdbc-java, compiled and run with a headless JDK),
# all installed when missing; psycopg, SQLAlchemy, pandas, Polars/connectorx and DuckDB in .venv-pg/.
PG_VENV := .venv-pg

pg-test: build $(PG_VENV)/.installed
	command -v psql >/dev/null || apt-get install -y postgresql-client || (apt-get update && apt-get install -y postgresql-client)
	command -v openssl >/dev/null || apt-get install -y openssl || (apt-get update && apt-get install -y openssl)
	test -f /usr/share/java/postgresql.jar && command -v javac >/dev/null || apt-get install -y libpostgresql-jdbc-java default-jdk-headless || (apt-get update && apt-get install -y libpostgresql-jdbc-java default-jdk-headless)
	$(PG_VENV)/bin/python tests/pg/check.py --binary $(BIN)

# Hostile sessions against the PostgreSQL and Flight SQL doors (tests/doors/hostile.py, psycopg and
# pyarrow of .venv-pg/): lying lengths and counts, truncated, unknown and mutated messages before
# and after login, forged tokens and random commands over Flight, from a fixed seed. The service
# must answer (08P01) or close in time, never panic or hang; its memory and sockets stay bounded.
doors-test: build $(PG_VENV)/.installed
	$(PG_VENV)/bin/python tests/doors/hostile.py --binary $(BIN)

# Docs that cannot drift (tests/docs/check.py, Python standard library): every flag and variable
# of every command's --help must be in docs/operators.md; the blocks of README.md and docs/ marked
# <!-- doc-test --> run in a scratch folder against the release binary serving the official tables
# (data/pbev/*.pdf imported there), and their output is checked. psql comes from Debian's
# postgresql-client (installed when missing); the Python blocks run with pandas, Polars,
# SQLAlchemy and psycopg of .venv-pg/.
docs-test: build $(PG_VENV)/.installed
	command -v psql >/dev/null || apt-get install -y postgresql-client || (apt-get update && apt-get install -y postgresql-client)
	$(PG_VENV)/bin/python tests/docs/check.py --binary $(BIN) --strict

# Analysts' SQL (POST /sql) against a real PostgreSQL server on the same export
# (tests/sql/against_postgres.py): the server from the Debian package postgresql (installed when
# missing), a throwaway cluster the test starts and stops (tests/sql/pgserver.py), psycopg and
# pyarrow in .venv-pg/. Prints a summary, also written to target/sql-test/summary.md.
POSTGRESQL_INSTALL = command -v /usr/lib/postgresql/*/bin/initdb >/dev/null || apt-get install -y postgresql || (apt-get update && apt-get install -y postgresql)

sql-test: build $(PG_VENV)/.installed
	$(POSTGRESQL_INSTALL)
	$(PG_VENV)/bin/python tests/sql/against_postgres.py --binary $(BIN)

# The Arrow Flight SQL door (tests/flight/check.py) with the ADBC Flight SQL driver, read from
# pyarrow, Polars and pandas, compared with the real PostgreSQL server of make sql-test on the same
# export; TLS with a certificate made by openssl. The driver goes into .venv-pg/ beside psycopg.
flight-test: build $(PG_VENV)/.flight-installed
	$(POSTGRESQL_INSTALL)
	command -v openssl >/dev/null || apt-get install -y openssl || (apt-get update && apt-get install -y openssl)
	$(PG_VENV)/bin/python tests/flight/check.py --binary $(BIN)

$(PG_VENV)/.flight-installed: tests/flight/requirements.txt tests/pg/requirements.txt
	test -x $(PG_VENV)/bin/python || $(PYTHON) -m venv $(PG_VENV)
	$(PG_VENV)/bin/python -m pip install --quiet --no-input --disable-pip-version-check -r tests/flight/requirements.txt
	touch $@

$(PG_VENV)/.installed: tests/pg/requirements.txt
	test -x $(PG_VENV)/bin/python || $(PYTHON) -m venv $(PG_VENV)
	$(PG_VENV)/bin/python -m pip install --quiet --no-input --disable-pip-version-check -r tests/pg/requirements.txt
	touch $@

formats-test: build $(FORMATS_VENV)/.installed
	$(FORMATS_VENV)/bin/python tests/formats/readback.py --binary $(BIN)

$(FORMATS_VENV)/.installed: tests/formats/requirements.txt
	test -x $(FORMATS_VENV)/bin/python || $(PYTHON) -m venv $(FORMATS_VENV)
	$(FORMATS_VENV)/bin/python -m pip install --quiet --no-input --disable-pip-version-check -r tests/formats/requirements.txt
	touch $@

# Exports from object storage (tests/s3/check.py): moto's S3-API server mode (pinned in
# tests/s3/requirements.txt, installed into $(S3_VENV)/) started by the test on loopback, replicas
# with --data s3://…: swap under load, broken and deleted objects, the store stopped and restarted,
# a restart on the state folder, three replicas converging.
S3_VENV := .venv-s3

s3-test: build $(S3_VENV)/.installed
	$(S3_VENV)/bin/python tests/s3/check.py --binary $(BIN)

$(S3_VENV)/.installed: tests/s3/requirements.txt
	test -x $(S3_VENV)/bin/python || $(PYTHON) -m venv $(S3_VENV)
	$(S3_VENV)/bin/python -m pip install --quiet --no-input --disable-pip-version-check -r tests/s3/requirements.txt
	touch $@
