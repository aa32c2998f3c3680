#!/usr/bin/env python3
"""Docs that cannot drift (`make docs-test`). Python standard library only.

0. Links: every relative link of README.md and docs/ names a file that exists and, into a
   Markdown file, one of its headings.
1. Flags: runs `eco-insights --help` and `eco-insights <command> --help` for every command and
   subcommand, and checks that each flag (`--name`) and each environment variable (`ECO_…`) the
   help lists is in the command's section of docs/operators.md (the heading naming
   `eco-insights <command>`), and that the section's tables name no flag the help does not list.
2. Examples: the fenced blocks of README.md and docs/**/*.md marked `<!-- doc-test -->` run, in
   order, in a scratch folder holding data/catalog.parquet (the bundled PBEV tables imported, as
   `make data` does), data/pbev/, queries/ and config/, against a service this script starts on
   that catalog (`serve --bind 127.0.0.1:0 --pg-bind 127.0.0.1:0`). In a block,
   `http://127.0.0.1:8080`, `127.0.0.1:5433` and `port=5433` become the started service's
   addresses and `target/release/eco-insights` the binary under test (also on PATH as
   `eco-insights`). After the block:
     <!-- expect: REGEX -->          searched in standard output (Python `re`, one or more)
     <!-- expect-stderr: REGEX -->   searched in standard error
     <!-- expect-file: PATH -->      a non-empty file in the scratch folder
     <!-- doc-test-output -->        then a fenced block whose lines must appear in standard
                                     output in that order (whitespace runs are one space; `…`
                                     stands for anything)
   On the marker: `exit=N` (expected status, default 0), `requires=TOOL` (skipped when TOOL is
   not on PATH), `python` (a ```python block, run with --python).

Exits 1 when a check fails. The service started here is always stopped; nothing outside the
scratch folder is written.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPERATORS = ROOT / "docs" / "operators.md"
BLOCK_TIMEOUT = 300

MARKER = re.compile(r"^\s*<!--\s*doc-test(?P<attrs>(?:\s+[^\s>-][^\s>]*)*)\s*-->\s*$")
EXPECT = re.compile(r"^\s*<!--\s*expect(?P<kind>|-stderr|-file):\s?(?P<value>.*?)\s*-->\s*$")
OUTPUT = re.compile(r"^\s*<!--\s*doc-test-output\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
HEADING = re.compile(r"^(?P<level>#{1,6})\s+(?P<text>.*?)\s*#*\s*$")


# ------------------------------------------------------------------------------------------------
# Markdown


@dataclass
class Block:
    path: Path
    line: int
    lang: str
    code: str
    attrs: dict[str, str]
    expect: list[str] = field(default_factory=list)
    expect_stderr: list[str] = field(default_factory=list)
    expect_files: list[str] = field(default_factory=list)
    output: list[str] | None = None

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def read_fence(lines: list[str], i: int) -> tuple[str, str, int]:
    """The fenced block opening at line i: (info string, content dedented, index after it)."""
    m = FENCE.match(lines[i])
    assert m
    indent, fence, info = len(m["indent"]), m["fence"], m["info"].strip()
    body = []
    j = i + 1
    while j < len(lines):
        close = FENCE.match(lines[j])
        if close and close["fence"][0] == fence[0] and len(close["fence"]) >= len(fence) and not close["info"].strip():
            break
        line = lines[j]
        body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
        j += 1
    return info, "\n".join(body) + "\n", j + 1


def parse_attrs(text: str) -> dict[str, str]:
    attrs = {}
    for word in text.split():
        key, _, value = word.partition("=")
        attrs[key] = value
    return attrs


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):  # a block nobody marked (a marker inside it is an example)
            _, _, i = read_fence(lines, i)
            continue
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        attrs = parse_attrs(m["attrs"])
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines) or not FENCE.match(lines[j]):
            raise SystemExit(f"{path.relative_to(ROOT)}:{i + 1}: <!-- doc-test --> is not followed by a fenced block")
        info, code, i = read_fence(lines, j)
        block = Block(path, j + 1, (info.split() or [""])[0], code, attrs)
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            e = EXPECT.match(line)
            if e:
                {"": block.expect, "-stderr": block.expect_stderr, "-file": block.expect_files}[e["kind"]].append(e["value"])
                i += 1
                continue
            if OUTPUT.match(line):
                k = i + 1
                while k < len(lines) and not lines[k].strip():
                    k += 1
                if k >= len(lines) or not FENCE.match(lines[k]):
                    raise SystemExit(f"{path.relative_to(ROOT)}:{i + 1}: <!-- doc-test-output --> is not followed by a fenced block")
                _, text, i = read_fence(lines, k)
                block.output = [ln for ln in text.split("\n") if ln.strip()]
                continue
            break
        out.append(block)
    return out


def sections(path: Path) -> list[tuple[int, str, list[str]]]:
    """(level, heading text without backticks, the section's lines up to the next heading of the
    same or a higher level)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    heads = []
    in_fence = None
    for n, line in enumerate(lines):
        f = FENCE.match(line)
        if f:
            if in_fence is None:
                in_fence = f["fence"]
            elif f["fence"][0] == in_fence[0] and len(f["fence"]) >= len(in_fence) and not f["info"].strip():
                in_fence = None
            continue
        h = HEADING.match(line) if in_fence is None else None
        if h:
            heads.append((n, len(h["level"]), h["text"].replace("`", "").strip()))
    out = []
    for k, (n, level, text) in enumerate(heads):
        end = next((m for m, lv, _ in heads[k + 1:] if lv <= level), len(lines))
        out.append((level, text, lines[n + 1:end]))
    return out


# ------------------------------------------------------------------------------------------------
# Flags


def help_text(binary: str, path: list[str]) -> str:
    done = subprocess.run([binary, *path, "--help"], capture_output=True, text=True, timeout=60,
                          env={**clean_env(), "COLUMNS": "200"})
    if done.returncode != 0:
        raise SystemExit(f"`eco-insights {' '.join(path)} --help` exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def help_section(text: str, title: str) -> list[str]:
    lines = text.split("\n")
    try:
        start = lines.index(title) + 1
    except ValueError:
        return []
    out = []
    for line in lines[start:]:
        if line and not line.startswith(" "):
            break
        out.append(line)
    return out


def commands(binary: str, path: list[str]) -> list[tuple[list[str], str]]:
    """Every leaf command under path with its --help text."""
    text = help_text(binary, path)
    subs = [ln.split()[0] for ln in help_section(text, "Commands:") if ln.strip() and re.match(r"^ {2}\S", ln)]
    subs = [s for s in subs if s != "help"]
    if not subs:
        return [(path, text)]
    out = []
    for s in subs:
        out += commands(binary, path + [s])
    return out


def check_flags(binary: str) -> list[str]:
    failures = []
    docs = {text: body for _, text, body in sections(OPERATORS)}
    documented_commands = {t for t in docs if t.startswith("eco-insights ")}
    seen = set()
    for path, text in commands(binary, []):
        name = "eco-insights " + " ".join(path)
        seen.add(name)
        flags = set()
        for ln in help_section(text, "Options:"):
            # an option's own line: `  -h, --help` or `      --out <OUT>` (descriptions are
            # indented further, or follow on the same line after two spaces)
            m = re.match(r"^ {2}(?:-\w, | {4})(--[a-z0-9][a-z0-9-]*)", ln)
            if m:
                flags.add(m[1])
        flags -= {"--help", "--version"}
        envs = set(re.findall(r"\[env:\s*(ECO_[A-Z0-9_]+)=", text))
        body = docs.get(name)
        if body is None:
            failures.append(f"docs/operators.md has no section `{name}` (its --help lists {', '.join(sorted(flags)) or 'no flag'})")
            continue
        section = "\n".join(body)
        for flag in sorted(flags):
            if not re.search(rf"`{re.escape(flag)}`", section):
                failures.append(f"docs/operators.md, section `{name}`: flag {flag} (in --help) is missing")
        for env in sorted(envs):
            if env not in section:
                failures.append(f"docs/operators.md, section `{name}`: variable {env} (in --help) is missing")
        for row in body:
            if row.startswith("|"):
                first = row.strip("|").split("|")[0]
                for flag in re.findall(r"`(--[a-z0-9][a-z0-9-]*)`", first):
                    if flag not in flags:
                        failures.append(f"docs/operators.md, section `{name}`: {flag} is documented but --help does not list it")
        print(f"flags  {name}: {len(flags)} flags, {len(envs)} variables", flush=True)
    for stale in sorted(documented_commands - seen):
        failures.append(f"docs/operators.md documents `{stale}`, which --help does not list")
    return failures


# ------------------------------------------------------------------------------------------------
# Links


def anchor(heading: str) -> str:
    """The anchor a code forge gives a heading (GitHub's rule: lower case, punctuation dropped,
    spaces to hyphens)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def check_links(files: list[Path]) -> list[str]:
    """Every relative link of the docs names a file that exists, and an anchor its headings give."""
    failures = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        text = re.sub(r"(?ms)^(\s*)(`{3,}|~{3,}).*?^\1\2\s*$", "", text)  # not inside code blocks
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, frag = target.partition("#")
            dest = (f.parent / path).resolve() if path else f
            if not dest.exists():
                failures.append(f"{f.relative_to(ROOT)}: link to {target}: no such file")
            elif frag and dest.suffix == ".md":
                anchors = {anchor(t) for _, t, _ in sections(dest)}
                if frag not in anchors:
                    failures.append(f"{f.relative_to(ROOT)}: link to {target}: no such heading")
    return failures


# ------------------------------------------------------------------------------------------------
# The service


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECO_")}
    env.setdefault("LC_ALL", "C.UTF-8")
    return env


class Service:
    def __init__(self, binary: str, cwd: Path):
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [binary, "serve", "--bind", "127.0.0.1:0", "--pg-bind", "127.0.0.1:0", "--data", "data/catalog.parquet",
             "--credentials", "config/credentials.json", "--queries", "queries", "--log", "warn"],
            cwd=cwd, stdout=subprocess.PIPE, stderr=open(cwd / "service.log", "wb"), text=True, env=clean_env())
        threading.Thread(target=self._read, daemon=True).start()
        self.http = self._wait(r"^listening on (http://\S+)$")
        self.pg = self._wait(r"^postgres listening on (\S+)$")
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(self.http + "/readyz", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise SystemExit(f"the service did not become ready; its log: {cwd / 'service.log'}")
            time.sleep(0.2)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def _wait(self, pattern: str) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for line in list(self.lines):
                m = re.match(pattern, line)
                if m:
                    return m[1]
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise SystemExit(f"the service did not print `{pattern}` (stdout: {self.lines})")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ------------------------------------------------------------------------------------------------
# Blocks


def squash(s: str) -> str:
    return " ".join(s.split())


def output_matches(expected: list[str], actual: str) -> str | None:
    """None when the expected lines appear in order in actual, else the first one missing."""
    lines = [squash(ln) for ln in actual.split("\n") if ln.strip()]
    k = 0
    for want in expected:
        pattern = re.compile(".*".join(re.escape(part) for part in squash(want).split("…")))
        while k < len(lines) and not pattern.fullmatch(lines[k]):
            k += 1
        if k == len(lines):
            return want
        k += 1
    return None


def run_block(b: Block, args, service: Service, sandbox: Path, env: dict[str, str]) -> tuple[str, str]:
    """("pass" | "skip" | "fail", detail)."""
    tool = b.attrs.get("requires")
    if tool and shutil.which(tool) is None:
        return "skip", f"{tool} is not installed"
    pg_host, _, pg_port = service.pg.rpartition(":")
    code = (b.code.replace("http://127.0.0.1:8080", service.http)
            .replace("127.0.0.1:5433", service.pg)
            .replace("port=5433", f"port={pg_port}")
            .replace("target/release/eco-insights", shlex.quote(args.binary)))
    if "python" in b.attrs or b.lang == "python":
        argv = [args.python, "-c", code]
    elif b.lang in ("sh", "bash", "shell", "console"):
        argv = ["bash", "-euo", "pipefail", "-c", code]
    else:
        return "fail", f"a block of `{b.lang}` cannot run (mark sh or python blocks)"
    try:
        done = subprocess.run(argv, cwd=sandbox, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        return "fail", f"did not finish within {BLOCK_TIMEOUT} s"
    if b.lang == "python" and done.returncode != 0 and "ModuleNotFoundError" in done.stderr and not args.strict:
        return "skip", done.stderr.strip().split("\n")[-1]
    problems = []
    want_exit = int(b.attrs.get("exit") or 0)
    if done.returncode != want_exit:
        problems.append(f"exit status {done.returncode}, expected {want_exit}")
    for pattern in b.expect:
        if not re.search(pattern, done.stdout):
            problems.append(f"standard output lacks /{pattern}/")
    for pattern in b.expect_stderr:
        if not re.search(pattern, done.stderr):
            problems.append(f"standard error lacks /{pattern}/")
    for name in b.expect_files:
        p = sandbox / name
        if not p.is_file() or p.stat().st_size == 0:
            problems.append(f"no file {name}")
    if b.output is not None:
        missing = output_matches(b.output, done.stdout)
        if missing is not None:
            problems.append(f"standard output lacks the line `{missing}` (in order)")
    if problems:
        shown = "\n".join(f"      | {ln}" for ln in (done.stdout[-3000:] + "\n--- stderr ---\n" + done.stderr[-2000:]).split("\n"))
        return "fail", "; ".join(problems) + "\n" + shown
    return "pass", ""


def make_sandbox(args) -> Path:
    sandbox = Path(tempfile.mkdtemp(prefix="eco-docs-"))
    (sandbox / "data").mkdir()
    (sandbox / "bin").mkdir()
    os.symlink(ROOT / "data" / "pbev", sandbox / "data" / "pbev")
    shutil.copytree(ROOT / "queries", sandbox / "queries")
    shutil.copytree(ROOT / "config", sandbox / "config")
    os.symlink(args.binary, sandbox / "bin" / "eco-insights")
    if args.data:
        shutil.copyfile(args.data, sandbox / "data" / "catalog.parquet")
    else:
        pdfs = sorted(glob.glob(str(sandbox / "data" / "pbev" / "*.pdf")))
        done = subprocess.run([args.binary, "import", "pbev", "--out", "data/catalog.parquet", "--marcas",
                               "data/pbev/marcas.toml", *[os.path.relpath(p, sandbox) for p in pdfs]],
                              cwd=sandbox, capture_output=True, text=True, timeout=600, env=clean_env())
        if done.returncode != 0:
            raise SystemExit(f"importing data/pbev/*.pdf failed (exit {done.returncode}): {done.stderr.strip()}")
    return sandbox


def doc_files(only: list[str]) -> list[Path]:
    files = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    if only:
        files = [f for f in files if any(str(f.relative_to(ROOT)).startswith(o) for o in only)]
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True, help="the eco-insights release binary")
    parser.add_argument("--data", help="serve this catalog instead of importing data/pbev/*.pdf")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs ```python blocks")
    parser.add_argument("--strict", action="store_true", help="a python block missing a module fails instead of being skipped")
    parser.add_argument("--only", action="append", default=[], help="only the files whose path starts with this")
    parser.add_argument("--flags-only", action="store_true", help="only the flags check")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    args.binary = str(Path(args.binary).resolve())
    if not os.access(args.binary, os.X_OK):
        print(f"no binary at {args.binary} (make build)", file=sys.stderr)
        return 2

    failures = [f"links: {f}" for f in check_links(doc_files([]))]
    failures += [f"flags: {f}" for f in check_flags(args.binary)]
    for f in failures:
        print(f"FAIL   {f}", flush=True)
    if args.flags_only:
        return 1 if failures else 0

    blocks = [b for f in doc_files(args.only) for b in blocks_of(f)]
    sandbox = make_sandbox(args)
    env = clean_env()
    env["PATH"] = f"{sandbox / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    service = Service(args.binary, sandbox)
    counts = {"pass": 0, "skip": 0, "fail": 0}
    try:
        print(f"service on {service.http} (PostgreSQL {service.pg}); scratch folder {sandbox}", flush=True)
        for b in blocks:
            t = time.monotonic()
            result, detail = run_block(b, args, service, sandbox, env)
            counts[result] += 1
            print(f"{result.upper():<6} {b.where()} ({time.monotonic() - t:.1f} s){': ' + detail if detail else ''}", flush=True)
            if result == "fail":
                failures.append(f"{b.where()}: {detail.splitlines()[0]}")
    finally:
        service.stop()
        if args.keep:
            print(f"kept {sandbox}")
        else:
            shutil.rmtree(sandbox, ignore_errors=True)
    print(f"docs-test: {counts['pass']} blocks passed, {counts['skip']} skipped, {counts['fail']} failed; "
          f"{len(failures) - counts['fail']} link or flag problems", flush=True)
    for f in failures:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
