# Eco Insights — every target uses the release profile, so Polars is compiled once.
CARGO ?= cargo
BIN := $(or $(CARGO_TARGET_DIR),target)/release/eco-insights
SAMPLE_ROWS := 12000
SAMPLE_SEED := 2026
# Python venv of the contract tests (git-ignored).
VENV := .venv
PYTHON ?= python3

.PHONY: run build test unit contract data fmt lint bench help

help:
	@echo "make run    build and serve data/catalog.parquet on 127.0.0.1:8080 (demo credentials)"
	@echo "make test   unit, black-box API and contract tests"
	@echo "make contract  schemathesis against the live service (every check; venv in $(VENV)/)"
	@echo "make data   regenerate the bundled sample catalog (fixed seed and size)"
	@echo "make bench  latency benchmark against its baselines"
	@echo "make fmt    format the code;  make lint  formatting check + clippy"

build:
	$(CARGO) build --release --locked

run: build
	$(BIN) serve

test:
	$(CARGO) test --release --locked
	$(MAKE) contract

data: build
	$(BIN) generate --rows $(SAMPLE_ROWS) --seed $(SAMPLE_SEED) --out data/catalog.parquet

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --all-targets --locked -- -D warnings

bench: data/catalog.parquet
	$(CARGO) test --release --locked --test bench

# Property-based contract tests: schemathesis (pinned in tests/contract/requirements.txt,
# installed into $(VENV)/) against the release binary serving the bundled sample.
contract: build $(VENV)/.contract-installed
	BIN=$(BIN) VENV=$(VENV) SAMPLE_ROWS=$(SAMPLE_ROWS) SAMPLE_SEED=$(SAMPLE_SEED) tests/contract/run.sh

$(VENV)/.contract-installed: tests/contract/requirements.txt
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --no-input --disable-pip-version-check -r tests/contract/requirements.txt
	touch $@
