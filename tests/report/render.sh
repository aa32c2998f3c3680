#!/usr/bin/env bash
# Renders the analyst report with headless Chromium and checks the screenshot is not blank
# (tests/report/png_check.py). Called by `make report-test`; Chromium must be installed.
#
# Usage: tests/report/render.sh REPORT.html OUT.png
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 REPORT.html OUT.png" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
html=$(realpath "$1")
png=$(realpath -m "$2")
[ -s "$html" ] || { echo "render: $html is missing or empty" >&2; exit 2; }
command -v chromium >/dev/null || { echo "render: chromium not found (make report-test installs it)" >&2; exit 2; }

profile=$(mktemp -d "${TMPDIR:-/tmp}/eco-report-chromium.XXXXXX")
trap 'rm -rf "$profile"' EXIT
rm -f "$png"
mkdir -p "$(dirname "$png")"
# A private profile; a timeout only to detect a hang.
if ! timeout 180 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --hide-scrollbars --no-first-run --user-data-dir="$profile" \
    --screenshot="$png" --window-size=1200,2000 "file://$html" >"$profile/chromium.log" 2>&1; then
    cat "$profile/chromium.log" >&2
    echo "render: chromium failed" >&2
    exit 1
fi
[ -s "$png" ] || { cat "$profile/chromium.log" >&2; echo "render: no screenshot written" >&2; exit 1; }
python3 "$here/png_check.py" "$png"
