# Eco Insights — every target uses the release profile, so Polars is compiled once.
CARGO ?= cargo
BIN := target/release/eco-insights
SAMPLE_ROWS := 12000
SAMPLE_SEED := 2026

.PHONY: run build test unit contract data fmt lint bench help

help:
	@echo "make run    build and serve data/catalog.parquet on 127.0.0.1:8080 (demo credentials)"
	@echo "make test   unit, black-box API and contract tests"
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
