#!/usr/bin/env bash
# Property-based contract test: starts the release binary on the bundled sample, runs
# schemathesis (every check, positive and negative data) against the service's own
# /openapi.json with the demo credentials, and always stops the server it started.
#
# Called by `make contract` once the binary is built and the venv installed. Environment:
#   BIN                    the service binary           (target/release/eco-insights)
#   VENV                   the Python venv              (.venv)
#   CONTRACT_DATA          the catalog to serve         (data/catalog.parquet; generated into a
#                          temporary folder with SAMPLE_ROWS / SAMPLE_SEED when missing)
#   CONTRACT_MAX_EXAMPLES  test cases per operation and phase (100)
#   CONTRACT_SEED          generation seed              (from schemathesis.toml)
#   CONTRACT_REPORT_DIR    JUnit report folder          (target/contract)
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${BIN:-target/release/eco-insights}
VENV=${VENV:-.venv}
DATA=${CONTRACT_DATA:-data/catalog.parquet}
MAX_EXAMPLES=${CONTRACT_MAX_EXAMPLES:-100}
SAMPLE_ROWS=${SAMPLE_ROWS:-12000}
SAMPLE_SEED=${SAMPLE_SEED:-2026}
REPORT_DIR=${CONTRACT_REPORT_DIR:-target/contract}
STARTUP_TIMEOUT_S=120

export CONTRACT_API_KEY=demo-key
export CONTRACT_API_SECRET=demo-secret

[ -x "$BIN" ] || { echo "contract: $BIN not found (run make build)" >&2; exit 2; }
[ -x "$VENV/bin/schemathesis" ] || { echo "contract: $VENV/bin/schemathesis not found (run make contract)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/eco-contract.XXXXXX")
server_pid=""
tester_pid=""
cleanup() {
    if [ -n "$tester_pid" ] && kill -0 "$tester_pid" 2>/dev/null; then
        kill -TERM "$tester_pid" 2>/dev/null || true
        wait "$tester_pid" 2>/dev/null || true
    fi
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
# Background jobs + `wait` so a signal to this script is handled at once (bash runs traps only
# between commands), and the EXIT trap always stops what this script started.
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ ! -f "$DATA" ]; then
    echo "contract: $DATA not found; generating the sample ($SAMPLE_ROWS rows, seed $SAMPLE_SEED)"
    "$BIN" generate --rows "$SAMPLE_ROWS" --seed "$SAMPLE_SEED" --out "$work/catalog.parquet" >/dev/null
    DATA="$work/catalog.parquet"
fi

# Only the demo pair, without quota, whatever config/credentials.json holds.
secret_sha=$(printf '%s' "$CONTRACT_API_SECRET" | sha256sum | cut -d' ' -f1)
cat >"$work/credentials.json" <<EOF
{"credentials": [{"key": "$CONTRACT_API_KEY", "name": "contract tests", "secret_sha256": "$secret_sha", "quota_per_minute": null}]}
EOF

"$BIN" serve --bind 127.0.0.1:0 --data "$DATA" --credentials "$work/credentials.json" --queries queries \
    --log warn >"$work/server.out" 2>"$work/server.log" </dev/null &
server_pid=$!

addr=""
for _ in $(seq 1 $((STARTUP_TIMEOUT_S * 10))); do
    addr=$(sed -n 's|^listening on http://||p' "$work/server.out" | head -n1)
    [ -n "$addr" ] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "contract: the service exited before listening:" >&2
        cat "$work/server.log" >&2
        exit 1
    fi
    sleep 0.1
done
if [ -z "$addr" ]; then
    echo "contract: the service did not print its address within ${STARTUP_TIMEOUT_S}s" >&2
    cat "$work/server.log" >&2
    exit 1
fi
echo "contract: service on http://$addr (data $DATA)"

mkdir -p "$REPORT_DIR"
seed_args=()
[ -n "${CONTRACT_SEED:-}" ] && seed_args=(--seed "$CONTRACT_SEED")

started=$(date +%s)
status=0
"$VENV/bin/schemathesis" --no-color --config-file tests/contract/schemathesis.toml run "http://$addr/openapi.json" \
    --checks all \
    --phases examples,coverage,fuzzing,stateful \
    --max-examples "$MAX_EXAMPLES" \
    "${seed_args[@]}" \
    --report junit --report-junit-path "$REPORT_DIR/junit.xml" \
    </dev/null &
tester_pid=$!
wait "$tester_pid" || status=$?
tester_pid=""
echo "contract: schemathesis finished in $(($(date +%s) - started)) s with status $status"

if [ "$status" -ne 0 ]; then
    echo "contract: last lines of the service log:" >&2
    tail -n 40 "$work/server.log" >&2 || true
fi
if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "contract: the service died during the run" >&2
    cat "$work/server.log" >&2
    status=1
fi
exit "$status"
