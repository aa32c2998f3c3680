#!/usr/bin/env python3
"""`make doors-test`: hostile sessions against the PostgreSQL and Arrow Flight SQL doors.

The service serves a generated export (4000 rows, seed 5) over HTTP, the PostgreSQL protocol and
Flight SQL, with JSON logs on standard error. From a fixed seed (`--seed`), `--pg-sessions`
connections to the PostgreSQL door each send one hostile thing:

- before authentication: start-up packets whose length lies (0..7, negative, huge, longer or
  shorter than what is sent), truncated start-ups, garbage, SSLRequest/GSSENCRequest/CancelRequest
  with wrong lengths, unknown protocol versions, a lying or truncated password message ('p')
  during the SCRAM exchange;
- after a correct SCRAM login: messages whose length lies, counts inside a Bind or Parse larger
  than its body, strings without their NUL, unknown or out-of-phase messages, COPY messages
  outside COPY, random byte mutations of a valid Parse/Bind/Describe/Execute/Sync sequence, and
  messages longer than the bytes sent (the socket then held, or half-closed).

Then `--flight-calls` calls to the Flight door: without a token, with a forged or tampered one, and
signed in with random commands, tickets, actions, mutated CommandStatementQuery messages and
do_put streams.

Checked, because a door facing untrusted networks must neither crash nor hang nor leak: the process
stays alive; its standard error holds only JSON lines and no panic; every connection that has not
signed in is closed within the start-up deadline (--header-timeout-ms, with margin); a malformed
message after login is answered with an ErrorResponse and a SQLSTATE, as PostgreSQL answers 08P01,
in at least 95 % of the sessions (bare closes counted); every Flight call ends with an error or an
answer within its 5 s deadline, and none without a valid token is answered (but the public list of
action types); psycopg and Flight still answer afterwards; the process holds no more sockets than
before and its memory stays within 256 MB of what it was. The outcomes are printed per kind.

    tests/doors/hostile.py --binary target/release/eco-insights [--seed 2026]
"""

from __future__ import annotations

import argparse
import base64
import collections
import concurrent.futures
import dataclasses
import heapq
import json
import os
import queue
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import psycopg
import pyarrow as pa
import pyarrow.flight as flight

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "pg"))
from check import credentials_entry, raw_login  # noqa: E402

KEY, SECRET = "doors-check", "doors-check-secret"
# The start-up deadline given to the service; a connection that has not signed in must be closed
# within 1.25x of it (the door's promise) plus a margin for a loaded machine.
STARTUP_MS = 1000
STARTUP_DEADLINE = STARTUP_MS / 1000 * 1.25 + 0.75
# After login: the time a complete message has to be answered, the time an incomplete one is held.
ANSWER_TIMEOUT, HOLD = 2.0, 0.3
# Reading right after sending, before a session still open is parked until its deadline.
QUICK = 0.05
WORKERS = 8
# SQLSTATE classes accepted as the answer to a malformed message: protocol violation (08),
# internal error (XX000), syntax (42), data (22).
ACCEPTED = ("08", "XX000", "42", "22")
PROTOCOL_V3, CANCEL_REQUEST, SSL_REQUEST, GSSENC_REQUEST = 196608, 80877102, 80877103, 80877104
# PostgreSQL's largest message (PQ_LARGE_MESSAGE_LIMIT): a longer one is refused at once.
PG_MAX_MESSAGE = 0x3FFFFFFF
FRONTEND_TAGS = b"PBDECQdcfSH"
UNKNOWN_TAGS = bytes(b for b in range(1, 256) if b not in b"PBDECQdcfSHXFp")
CLIENT_NONCE = "aG9zdGlsZS1kb29ycy1ub25jZQ"
SQL_TYPE = "type.googleapis.com/arrow.flight.protocol.sql."
FLIGHT_ACTIONS = ["CreatePreparedStatement", "ClosePreparedStatement", "CreatePreparedSubstraitPlan",
                  "BeginTransaction", "EndTransaction", "CancelQuery", "CancelFlightInfo",
                  "RenewFlightEndpoint", "SetSessionOptions", "GetSessionOptions", "CloseSession"]

passed = 0
failed = 0


def check(name: str, ok: bool, detail: str = "") -> None:
    global passed, failed
    if ok:
        passed += 1
        print(f"doors: ok {name}", flush=True)
    else:
        failed += 1
        print(f"doors: FAILED {name}: {detail}", flush=True)


# --- The PostgreSQL wire protocol ---------------------------------------------------------------

def cstr(text: str | bytes) -> bytes:
    return (text.encode() if isinstance(text, str) else text) + b"\0"


def frame(tag: bytes, body: bytes, length: int | None = None) -> bytes:
    """A message; `length` lies when given."""
    return tag + struct.pack("!i", len(body) + 4 if length is None else length) + body


def startup(version: int = PROTOCOL_V3, length: int | None = None) -> bytes:
    body = struct.pack("!i", version) + cstr("user") + cstr(KEY) + cstr("database") + cstr("eco") + b"\0"
    return struct.pack("!i", len(body) + 4 if length is None else length) + body


PARSE = frame(b"P", cstr("") + cstr("SELECT $1::int") + struct.pack("!h", 0))
BIND = frame(b"B", cstr("") + cstr("") + struct.pack("!hhhi", 1, 0, 1, 1) + b"1" + struct.pack("!h", 0))
DESCRIBE = frame(b"D", b"P" + cstr(""))
EXECUTE = frame(b"E", cstr("") + struct.pack("!i", 0))
SYNC = frame(b"S", b"")
VALID = [PARSE, BIND, DESCRIBE, EXECUTE, SYNC]


def walk(data: bytes) -> tuple[str, int]:
    """How the server frames `data`: 'complete' when every message is whole or declares a length
    to refuse at once (under 4, over 1 GB), else 'partial'; and the number of whole Syncs."""
    pos, syncs = 0, 0
    while pos < len(data):
        if len(data) - pos < 5:
            return "partial", syncs
        n = struct.unpack_from("!i", data, pos + 1)[0]
        if n < 4 or n > PG_MAX_MESSAGE:
            return "complete", syncs
        if pos + 1 + n > len(data):
            return "partial", syncs
        syncs += data[pos:pos + 5] == SYNC
        pos += 1 + n
    return "complete", syncs


def mutate(rng: random.Random, data: bytes, count: int) -> bytes:
    """`count` random edits: a byte set, a bit flipped, a byte inserted or deleted."""
    out = bytearray(data)
    for _ in range(count):
        i, op = rng.randrange(len(out)), rng.randrange(4)
        if op == 0:
            out[i] = rng.randrange(256)
        elif op == 1:
            out[i] ^= 1 << rng.randrange(8)
        elif op == 2:
            out.insert(i, rng.randrange(256))
        elif len(out) > 1:
            del out[i]
    return bytes(out)


def lying_length(rng: random.Random, kind: str, real: int) -> int:
    if kind == "short":
        return rng.randint(0, 3)
    if kind == "negative":
        return rng.choice([-1, -4, -(2 ** 31), rng.randint(-(2 ** 31), -1)])
    if kind == "huge":
        return rng.choice([0x40000000, 0x7FFFFFFF, rng.randint(0x40000000, 0x7FFFFFFF)])
    return real + rng.randint(1, 4096)


@dataclasses.dataclass
class Session:
    """One hostile connection: what is sent (the plan) and what the server did (the outcome)."""
    kind: str
    after_login: bool
    # Bytes sent once signed in or once the start-up is sent; for a SCRAM final message, a
    # function of the server's nonce.
    payload: bytes | Callable[[str], bytes]
    # 'answer': complete messages, to be answered or closed; 'hold': an incomplete message, the
    # socket held; 'shut': an incomplete message, then the client's half-close.
    ending: str = "answer"
    # The bytes may still form valid messages (a mutation): a normal answer is an answer too.
    may_be_valid: bool = False
    # SCRAM kinds: the payload is sent after AuthenticationSASL (1) or AuthenticationSASLContinue (2).
    sasl_stage: int = 0
    # A one-byte answer (N/S/G) to an SSLRequest or GSSENCRequest may come before the messages.
    lead_byte: bool = False
    data: bytearray = dataclasses.field(default_factory=bytearray)
    end: str = "open"
    login_failed: bool = False
    deadline: float = 0.0

    def messages(self) -> list[tuple[bytes, bytes]]:
        data = bytes(self.data)
        if self.lead_byte and data[:1] in (b"N", b"S", b"G"):
            data = data[1:]
        out, pos = [], 0
        while pos + 5 <= len(data):
            n = struct.unpack_from("!i", data, pos + 1)[0]
            if n < 4 or pos + 1 + n > len(data):
                break
            out.append((data[pos:pos + 1], data[pos + 5:pos + 1 + n]))
            pos += 1 + n
        return out

    def sqlstates(self) -> list[str]:
        return [error_fields(body).get("C", "?") for tag, body in self.messages() if tag == b"E"]

    def ready(self) -> bool:
        return any(tag == b"Z" for tag, _ in self.messages())

    def label(self) -> str:
        if self.login_failed:
            return "login failed"
        codes = self.sqlstates()
        head = "E " + ",".join(sorted(set(codes))) if codes else ("answered" if self.messages() else "nothing")
        return f"{head}{' +ReadyForQuery' if self.ready() else ''} -> {self.end}"


def error_fields(body: bytes) -> dict[str, str]:
    return {chr(f[0]): f[1:].decode(errors="replace") for f in body.split(b"\0") if f}


def auth_code(s: Session, code: int) -> bytes | None:
    """The body of the first Authentication message `code` the server sent, if any."""
    for tag, body in s.messages():
        if tag == b"R" and len(body) >= 4 and struct.unpack("!i", body[:4])[0] == code:
            return body[4:]
    return None


def receive(sock: socket.socket, s: Session, deadline: float, until: Callable[[], bool] = lambda: False) -> bool:
    """Reads the server's answer into `s` until it closes (True), `until()` holds or `deadline`
    passes (False). Past the deadline, what is already there is still read."""
    while not until():
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return False
        except ConnectionError:
            s.end = "reset"
            return True
        if not chunk:
            s.end = "eof"
            return True
        s.data += chunk
    return False


def send(sock: socket.socket, s: Session, data: bytes) -> bool:
    """Sends `data`; False when the server has already closed (a reset)."""
    try:
        sock.sendall(data)
        if s.ending == "shut":
            sock.shutdown(socket.SHUT_WR)
        return True
    except ConnectionError:
        s.end = "reset"
        return False


def scram_until(sock: socket.socket, s: Session, code: int, message: bytes) -> bool:
    """Sends a correct step of the exchange and waits for Authentication message `code`; False
    when the server closed instead or did not send it by the start-up deadline."""
    return send(sock, s, message) and not receive(sock, s, s.deadline, lambda: auth_code(s, code) is not None) \
        and auth_code(s, code) is not None


def before_login(addr: tuple[str, int], s: Session, parked: queue.SimpleQueue) -> None:
    """Sends the hostile start-up (or the SCRAM exchange up to its hostile message); a session the
    server has not closed at once is parked until its start-up deadline."""
    sock = socket.create_connection(addr, timeout=5)
    s.deadline = time.monotonic() + STARTUP_DEADLINE
    payload = s.payload
    if s.sasl_stage and not scram_until(sock, s, 10, startup()):
        sock.close()
        return
    if s.sasl_stage == 2:
        first = f"n,,n=,r={CLIENT_NONCE}".encode()
        if not scram_until(sock, s, 11, frame(b"p", cstr("SCRAM-SHA-256") + struct.pack("!i", len(first)) + first)):
            sock.close()
            return
        attributes = dict(a.split("=", 1) for a in auth_code(s, 11).decode(errors="replace").split(",") if "=" in a)
        payload = s.payload(attributes.get("r", ""))
    if send(sock, s, payload) and not receive(sock, s, min(s.deadline, time.monotonic() + QUICK)):
        parked.put((s.deadline, id(s), s, sock))
    else:
        sock.close()


def after_login(addr: tuple[str, int], s: Session, parked: queue.SimpleQueue) -> None:
    """Signs in with SCRAM, sends the hostile messages and reads the answer: until the server
    closes or has answered every Sync; an incomplete message is parked for HOLD seconds."""
    try:
        sock = raw_login(addr[0], addr[1], KEY, SECRET, keep_open=True).get("socket")
    except OSError:
        sock = None
    if sock is None:
        s.login_failed = True
        return
    if s.ending == "hold":
        s.deadline = time.monotonic() + HOLD
        if send(sock, s, s.payload) and not receive(sock, s, time.monotonic() + QUICK):
            parked.put((s.deadline, id(s), s, sock))
            return
    elif send(sock, s, s.payload):
        syncs = walk(s.payload)[1]
        receive(sock, s, time.monotonic() + ANSWER_TIMEOUT,
                lambda: syncs > 0 and sum(tag == b"Z" for tag, _ in s.messages()) >= syncs)
    sock.close()


def run_session(addr: tuple[str, int], s: Session, parked: queue.SimpleQueue) -> None:
    try:
        (after_login if s.after_login else before_login)(addr, s, parked)
    except OSError as e:
        s.end = f"client error {type(e).__name__}"


def settle(due: list, until: float) -> None:
    """Reads the parked sessions whose deadline is before `until`, then closes them: one the server
    has not closed by then stays 'open'."""
    while due and due[0][0] <= until:
        deadline, _, s, sock = heapq.heappop(due)
        receive(sock, s, deadline)
        sock.close()


def run_pg(addr: tuple[str, int], sessions: list[Session]) -> None:
    """The sessions on WORKERS threads; parked ones are settled as their deadlines pass."""
    parked: queue.SimpleQueue = queue.SimpleQueue()
    due: list = []
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        pending = {pool.submit(run_session, addr, s, parked) for s in sessions}
        while pending:
            done, pending = concurrent.futures.wait(pending, timeout=0.05)
            for future in done:
                future.result()
            while not parked.empty():
                heapq.heappush(due, parked.get())
            settle(due, time.monotonic())
    while not parked.empty():
        heapq.heappush(due, parked.get())
    settle(due, float("inf"))


# --- Hostile PostgreSQL sessions, by kind -------------------------------------------------------

def startup_lies(rng: random.Random, lie: str) -> Session:
    real = len(startup())
    ending = "answer" if lie != "long" else rng.choice(["hold", "shut"])
    return Session(f"start-up length {lie}", False, startup(length=lying_length(rng, lie, real)), ending)


def startup_shorter(rng: random.Random) -> Session:
    return Session("start-up shorter than its parameters", False, startup(length=rng.randint(9, len(startup()) - 1)))


def startup_truncated(rng: random.Random) -> Session:
    data = startup()
    return Session("start-up truncated", False, data[:rng.randint(1, len(data) - 1)], rng.choice(["hold", "shut"]))


def garbage(rng: random.Random) -> Session:
    data = rng.choice([rng.randbytes(rng.randint(1, 512)), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"])
    return Session("garbage before start-up", False, data)


def special_request(rng: random.Random) -> Session:
    name, code = rng.choice([("SSLRequest", SSL_REQUEST), ("GSSENCRequest", GSSENC_REQUEST),
                             ("CancelRequest", CANCEL_REQUEST)])
    right = 16 if code == CANCEL_REQUEST else 8
    length = rng.choice([n for n in (0, 4, 7, 9, 12, 16, 20, 64, 10000, -8) if n != right])
    tail = rng.randbytes(max(0, length - 8) if rng.random() < 0.5 else rng.randint(0, 24))
    return Session(f"{name} with a wrong length", False, struct.pack("!ii", length, code) + tail, lead_byte=True)


def unknown_version(rng: random.Random) -> Session:
    version = rng.choice([0, 1 << 16, 2 << 16, (3 << 16) | rng.randint(3, 0xFFFF), 4 << 16,
                          rng.randint(-(2 ** 31), 2 ** 31 - 1)])
    return Session("unknown protocol version", False, startup(version=version))


def sasl_initial(rng: random.Random) -> Session:
    """A hostile SASLInitialResponse after AuthenticationSASL."""
    first = f"n,,n=,r={CLIENT_NONCE}".encode()
    body = cstr("SCRAM-SHA-256") + struct.pack("!i", len(first)) + first
    variant = rng.choice(["short", "negative", "huge", "long", "truncated body", "inner length",
                          "no NUL", "unknown mechanism", "garbage"])
    ending = "hold" if variant == "long" else "answer"
    if variant in ("short", "negative", "huge", "long"):
        payload = frame(b"p", body, lying_length(rng, variant, len(body) + 4))
    elif variant == "truncated body":
        payload = frame(b"p", body[:rng.randint(0, len(body) - 1)])
    elif variant == "inner length":
        inner = rng.choice([-2, -(2 ** 31), 0x7FFFFFFF, len(first) + rng.randint(1, 64), len(first) - 3])
        payload = frame(b"p", cstr("SCRAM-SHA-256") + struct.pack("!i", inner) + first)
    elif variant == "no NUL":
        payload = frame(b"p", b"SCRAM-SHA-256")
    elif variant == "unknown mechanism":
        payload = frame(b"p", cstr(rng.choice(["SCRAM-SHA-1", "PLAIN", "SCRAM-SHA-256-PLUS"]))
                        + struct.pack("!i", len(first)) + first)
    else:
        junk = rng.randbytes(rng.randint(0, 64))
        payload = frame(b"p", cstr("SCRAM-SHA-256") + struct.pack("!i", len(junk)) + junk)
    return Session(f"SASLInitialResponse: {variant}", False, payload, ending, sasl_stage=1)


def sasl_final(rng: random.Random) -> Session:
    """A hostile SASLResponse after AuthenticationSASLContinue."""
    proof = base64.b64encode(rng.randbytes(32)).decode()
    variant = rng.choice(["truncated", "mutated", "short", "negative", "huge", "long", "empty", "wrong nonce"])
    seed = rng.getrandbits(32)

    def payload(nonce: str) -> bytes:
        final, local = f"c=biws,r={nonce},p={proof}".encode(), random.Random(seed)
        if variant == "truncated":
            return frame(b"p", final[:local.randint(0, len(final) - 1)])
        if variant == "mutated":
            return frame(b"p", mutate(local, final, 3))
        if variant in ("short", "negative", "huge", "long"):
            return frame(b"p", final, lying_length(local, variant, len(final) + 4))
        if variant == "empty":
            return frame(b"p", b"")
        return frame(b"p", f"c=biws,r={CLIENT_NONCE}forged,p={proof}".encode())
    return Session(f"SASLResponse: {variant}", False, payload, "hold" if variant == "long" else "answer",
                   sasl_stage=2)


def message_lies(rng: random.Random, lie: str) -> Session:
    """A message whose length lies; one longer than sent is held or half-closed."""
    if lie == "long":
        message = rng.choice(VALID)
        length = lying_length(rng, lie, len(message) - 1)
        return Session("message longer than sent", True, message[:1] + struct.pack("!i", length) + message[5:],
                       rng.choice(["hold", "shut"]))
    tag = bytes([rng.choice(FRONTEND_TAGS)])
    return Session(f"message length {lie}", True,
                   frame(tag, rng.randbytes(rng.randint(0, 16)), lying_length(rng, lie, 0)) + SYNC)


def bind_counts(rng: random.Random) -> Session:
    """A Bind whose counts or value lengths do not match its body, after a valid Parse."""
    names = cstr("") + cstr("")
    h = lambda *v: struct.pack("!" + "h" * len(v), *v)
    body = rng.choice([
        struct.pack("!H", 0xFFFF) + h(0, 0),                                  # 65535 parameter formats
        h(1, 0) + struct.pack("!H", 0xFFFF) + struct.pack("!i", 1) + b"1" + h(0),  # 65535 parameters
        h(1, 0, 1) + struct.pack("!i", 0x40000000) + b"1" + h(0),              # a 1 GB value
        h(1, 0, 1) + struct.pack("!i", -2) + b"1" + h(0),                      # a value length -2
        h(1, 0, 1) + struct.pack("!i", 100) + b"1" + h(0),                     # a value past the body
        h(1, 0, 1) + struct.pack("!i", 1) + b"1" + struct.pack("!H", 0xFFFF),  # 65535 result formats
        h(1, 0, 2) + struct.pack("!i", 1) + b"1" + h(0),                       # two parameters, one sent
        h(1, 0, 1) + struct.pack("!i", 1) + b"1" + h(3, 0),                    # three result formats, one sent
    ])
    return Session("Bind counts past the body", True, PARSE + frame(b"B", names + body) + SYNC)


def other_counts(rng: random.Random) -> Session:
    """Parse, Describe, Close and Execute bodies that do not hold what they declare."""
    message = rng.choice([
        frame(b"P", cstr("") + cstr("SELECT $1::int") + struct.pack("!H", 0xFFFF) + struct.pack("!i", 23)),
        frame(b"P", cstr("") + cstr("SELECT $1::int") + struct.pack("!h", 3) + struct.pack("!i", 23)),
        frame(b"E", cstr("") + b"\0\0"),
        frame(b"D", b"X" + cstr("")),
        frame(b"C", b"Q" + cstr("")),
        frame(b"D", b""),
        frame(b"C", b""),
    ])
    return Session("Parse/Describe/Close/Execute body short or invalid", True, message + SYNC)


def missing_nul(rng: random.Random) -> Session:
    message = rng.choice([
        frame(b"Q", b"SELECT 1"),
        frame(b"P", cstr("") + b"SELECT 1"),
        frame(b"P", b"statement"),
        frame(b"B", b"portal"),
        frame(b"D", b"Sstatement"),
        frame(b"C", b"Pportal"),
        frame(b"E", b"portal"),
    ])
    return Session("string without its NUL", True, message + SYNC)


def unknown_tag(rng: random.Random) -> Session:
    tag = bytes([rng.choice(UNKNOWN_TAGS)])
    return Session("unknown message type", True, frame(tag, rng.randbytes(rng.randint(0, 32))) + SYNC)


def out_of_phase(rng: random.Random) -> Session:
    message = rng.choice([frame(b"p", cstr(SECRET)), startup(), struct.pack("!ii", 8, SSL_REQUEST),
                          frame(b"p", cstr("SCRAM-SHA-256") + struct.pack("!i", 4) + b"n,,x")])
    return Session("start-up or password message after login", True, message + SYNC)


def copy_outside(rng: random.Random) -> Session:
    message = rng.choice([frame(b"d", rng.randbytes(rng.randint(0, 64))), frame(b"c", b""), frame(b"f", cstr("stop"))])
    return Session("CopyData/CopyDone/CopyFail outside COPY", True, message + SYNC, may_be_valid=True)


def mutated(rng: random.Random) -> Session:
    data = mutate(rng, b"".join(VALID), rng.randint(1, 6))
    if walk(data)[0] == "partial":
        return Session("mutated Parse/Bind/Describe/Execute/Sync", True, data, "hold", may_be_valid=True)
    return Session("mutated Parse/Bind/Describe/Execute/Sync", True, data + SYNC, may_be_valid=True)


PG_KINDS: list[Callable[[random.Random], Session]] = [
    lambda r: startup_lies(r, "short"), lambda r: startup_lies(r, "negative"),
    lambda r: startup_lies(r, "huge"), lambda r: startup_lies(r, "long"),
    startup_shorter, startup_truncated, garbage, special_request, unknown_version, sasl_initial, sasl_final,
    lambda r: message_lies(r, "short"), lambda r: message_lies(r, "negative"),
    lambda r: message_lies(r, "huge"), lambda r: message_lies(r, "long"),
    bind_counts, other_counts, missing_nul, unknown_tag, out_of_phase, copy_outside,
    mutated, mutated,  # twice: the least constrained kind
]


def pg_checks(sessions: list[Session]) -> None:
    """The distribution of outcomes per kind, then the checks on them."""
    by_kind: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for s in sessions:
        by_kind[("after login: " if s.after_login else "before login: ") + s.kind][s.label()] += 1
    for kind, outcomes in sorted(by_kind.items()):
        print(f"doors: pg {kind} ({sum(outcomes.values())}): "
              + ", ".join(f"{label} x{n}" for label, n in outcomes.most_common()))
    before = [s for s in sessions if not s.after_login]
    after = [s for s in sessions if s.after_login and not s.login_failed]
    codes = collections.Counter(c for s in after for c in s.sqlstates())
    print("doors: pg SQLSTATEs after login: " + ", ".join(f"{c} x{n}" for c, n in codes.most_common()))

    left_open = [s for s in before if s.end not in ("eof", "reset")]
    check(f"pg: all {len(before)} sessions before login closed by the server within {STARTUP_DEADLINE:.2f} s",
          not left_open, summary(left_open))
    failed_logins = [s for s in sessions if s.login_failed]
    check(f"pg: all {len(sessions) - len(before)} SCRAM logins before a hostile message succeeded",
          not failed_logins, f"{len(failed_logins)} failed")

    complete = [s for s in after if s.ending == "answer"]
    answered = [s for s in complete if answer_of(s)]
    bare = [s for s in complete if not s.sqlstates() and s.end in ("eof", "reset")]
    share = len(answered) / max(1, len(complete))
    check(f"pg: malformed messages after login answered with an ErrorResponse ({len(answered)}/{len(complete)} "
          f"= {share:.1%}, at least 95 %; bare closes {len(bare)})", share >= 0.95,
          "not answered: " + summary([s for s in complete if not answer_of(s)]))
    silent = [s for s in complete if s.end == "open" and not s.messages()]
    unclosed = [s for s in after if s.ending == "shut" and s.end == "open"]
    check("pg: no session after login left without an answer, nor a half-closed one left open",
          not silent and not unclosed, f"silent: {summary(silent)}; half-closed left open: {summary(unclosed)}")


def answer_of(s: Session) -> bool:
    """An ErrorResponse of an accepted class; where the bytes may still be valid, any SQLSTATE or a
    ReadyForQuery."""
    codes = s.sqlstates()
    if s.may_be_valid:
        return bool(codes) or s.ready()
    return any(c.startswith(ACCEPTED) for c in codes)


def summary(sessions: list[Session]) -> str:
    counts = collections.Counter(f"{s.kind} [{s.label()}]" for s in sessions)
    return "; ".join(f"{k} x{n}" for k, n in counts.most_common(8)) or "none"


# --- Hostile Flight calls -----------------------------------------------------------------------

def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def pb_field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def sql_command(name: str, body: bytes) -> bytes:
    """A Flight SQL command: google.protobuf.Any of arrow.flight.protocol.sql.`name`."""
    return pb_field(1, (SQL_TYPE + name).encode()) + pb_field(2, body)


def statement_query(sql: str) -> bytes:
    return sql_command("CommandStatementQuery", pb_field(1, sql.encode()))


def hostile_command(rng: random.Random) -> bytes:
    valid = statement_query("SELECT count(*) AS n FROM catalog")
    return rng.choice([
        lambda: rng.randbytes(rng.randint(0, 256)),
        lambda: mutate(rng, valid, rng.randint(1, 4)),
        lambda: valid[:rng.randint(0, len(valid) - 1)],
        lambda: sql_command(rng.choice(["CommandGetTables", "CommandPreparedStatementQuery", "CommandStatementUpdate",
                                        "CommandGetSqlInfo", "NoSuchCommand"]), rng.randbytes(rng.randint(0, 64))),
        lambda: statement_query("SELECT " + "".join(rng.choice("abc(),'*;$1 \"\\") for _ in range(rng.randint(0, 40)))),
    ])()


def fetch_all(client: flight.FlightClient, info: flight.FlightInfo, opts: flight.FlightCallOptions) -> None:
    for endpoint in info.endpoints:
        client.do_get(endpoint.ticket, opts).read_all()


def do_put(client: flight.FlightClient, rng: random.Random, opts: flight.FlightCallOptions) -> None:
    descriptor = rng.choice([flight.FlightDescriptor.for_command(hostile_command(rng)),
                             flight.FlightDescriptor.for_path("catalog", rng.randbytes(8).hex())])
    table = pa.table({"id": pa.array(range(rng.randint(0, 50)), pa.int64())})
    writer, _ = client.do_put(descriptor, table.schema, opts)
    writer.write_table(table)
    writer.close()


FLIGHT_OPS: dict[str, Callable] = {
    "get_flight_info(random bytes)": lambda c, r, o: c.get_flight_info(
        flight.FlightDescriptor.for_command(r.randbytes(r.randint(0, 256))), o),
    "get_flight_info(hostile command) + do_get": lambda c, r, o: fetch_all(
        c, c.get_flight_info(flight.FlightDescriptor.for_command(hostile_command(r)), o), o),
    "get_schema(hostile command)": lambda c, r, o: c.get_schema(
        flight.FlightDescriptor.for_command(hostile_command(r)), o),
    "do_get(random ticket)": lambda c, r, o: c.do_get(flight.Ticket(r.randbytes(r.randint(0, 128))), o).read_all(),
    "do_action(random)": lambda c, r, o: list(c.do_action(flight.Action(
        r.choice(FLIGHT_ACTIONS + [r.randbytes(6).hex()]), r.randbytes(r.randint(0, 128))), o)),
    "do_put(random descriptor)": do_put,
    "list_flights": lambda c, r, o: list(c.list_flights(r.randbytes(r.randint(0, 16)), o)),
    "list_actions": lambda c, r, o: c.list_actions(o),
}
# The action types Flight SQL defines: public, may be answered without a token.
def flight_options(rng: random.Random, token: tuple[bytes, bytes]) -> tuple[str, flight.FlightCallOptions]:
    """Signed in most of the time; else no token, a forged one or the real one tampered with."""
    mode = rng.choices(["signed in", "no token", "forged token", "tampered token"], [6, 1, 1, 1])[0]
    if mode == "signed in":
        headers = [token]
    elif mode == "no token":
        headers = []
    elif mode == "forged token":
        headers = [(b"authorization", b"Bearer " + base64.b64encode(rng.randbytes(rng.randint(0, 96))))]
    else:
        value = bytearray(token[1])
        i = rng.randrange(len(b"Bearer "), len(value))
        value[i] = ord(rng.choice([c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                                   if ord(c) != value[i]]))
        headers = [(token[0], bytes(value))]
    return mode, flight.FlightCallOptions(timeout=5, headers=headers)


def run_flight(addr: str, rng: random.Random, calls: int) -> tuple[list[tuple[str, str, str, bool]], dict[str, str]]:
    """The hostile calls, one after another: (signed-in mode, operation, outcome, fine) each, the
    outcome an exception's class name or 'answer'; fine when an answer or an error the door sent
    (a Flight error, or the Arrow error pyarrow maps a gRPC status to, as INVALID_ARGUMENT to
    ArrowInvalid), not a timeout nor a lost connection; and the first message of each error class.
    Stops after three timeouts (a hung door)."""
    client = flight.FlightClient(f"grpc://{addr}")
    token = client.authenticate_basic_token(KEY, SECRET, flight.FlightCallOptions(timeout=5))
    results, messages = [], {}
    try:
        for _ in range(calls):
            mode, opts = flight_options(rng, token)
            op = rng.choice(sorted(FLIGHT_OPS))
            try:
                FLIGHT_OPS[op](client, rng, opts)
                outcome, fine = "answer", True
            except Exception as e:  # noqa: BLE001 - the error's class is the outcome
                outcome = type(e).__name__
                # pyarrow raises some statuses (get_schema's UNAUTHENTICATED) as a bare OSError
                # "Flight returned <status> error": the status is the outcome.
                if type(e) is OSError and str(e).startswith("Flight returned unauthenticated error"):
                    outcome = "FlightUnauthenticatedError"
                messages.setdefault(outcome, str(e).split(". gRPC client debug context")[0][:200])
                fine = (isinstance(e, (flight.FlightError, pa.ArrowException))
                        or outcome == "FlightUnauthenticatedError") \
                    and not isinstance(e, (flight.FlightTimedOutError, flight.FlightUnavailableError))
            results.append((mode, op, outcome, fine))
            if sum(r[2] == "FlightTimedOutError" for r in results) >= 3:
                break
    finally:
        client.close()
    return results, messages


def flight_checks(results: list[tuple[str, str, str, bool]], messages: dict[str, str], calls: int) -> None:
    by_kind: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for mode, op, outcome, _ in results:
        by_kind[f"{op} ({mode})"][outcome] += 1
    for kind, outcomes in sorted(by_kind.items()):
        print(f"doors: flight {kind} ({sum(outcomes.values())}): "
              + ", ".join(f"{o} x{n}" for o, n in outcomes.most_common()))
    for outcome, message in sorted(messages.items()):
        print(f"doors: flight first {outcome}: {message}")
    unsigned = [(op, o) for mode, op, o, _ in results if mode != "signed in"]
    print(f"doors: flight without a valid token: {len(unsigned)} calls, "
          f"{sum(o == 'FlightUnauthenticatedError' for _, o in unsigned)} refused UNAUTHENTICATED")
    wrong = collections.Counter(f"{op} ({mode}): {o}" for mode, op, o, fine in results if not fine)
    check(f"flight: all {calls} hostile calls ended with a Flight error or an answer within 5 s",
          len(results) == calls and not wrong, f"{len(results)} calls made; {dict(wrong)}")
    # A command, ticket or action body that does not decode is the client's error, never the
    # door's: INVALID_ARGUMENT, not INTERNAL.
    internal = collections.Counter(f"{op} ({mode})" for mode, op, o, _ in results if o == "FlightInternalError")
    check("flight: no hostile call answered INTERNAL", not internal,
          f"{dict(internal)}; first: {messages.get('FlightInternalError', '')}")
    # The sign-in is checked before a command's bytes are decoded: whatever they hold, a call
    # without a valid token is UNAUTHENTICATED.
    other = collections.Counter(f"{op}: {o}" for op, o in unsigned if o != "FlightUnauthenticatedError")
    check(f"flight: every call without a valid token refused UNAUTHENTICATED ({len(unsigned)})",
          not other, str(dict(other)))


# --- The service --------------------------------------------------------------------------------

def start_service(binary: str, work: Path) -> tuple[subprocess.Popen, tuple[str, int], str]:
    """The service on a generated export: its process, PostgreSQL address and Flight address."""
    data, creds = work / "catalog.parquet", work / "credentials.json"
    subprocess.run([binary, "generate", "--rows", "4000", "--seed", "5", "--out", str(data)],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    creds.write_text(json.dumps({"credentials": [credentials_entry(KEY, SECRET)]}))
    proc = subprocess.Popen([binary, "serve", "--bind", "127.0.0.1:0", "--pg-bind", "127.0.0.1:0",
                             "--flight-bind", "127.0.0.1:0", "--data", str(data), "--credentials", str(creds),
                             "--queries", str(ROOT / "queries"), "--header-timeout-ms", str(STARTUP_MS),
                             # Sessions parked until their deadline must not fill the door (53300).
                             "--pg-max-connections", "1024", "--log", "info", "--log-format", "json"],
                            stdout=subprocess.PIPE, stderr=open(work / "stderr.log", "w"),
                            stdin=subprocess.DEVNULL, text=True)
    lines = [proc.stdout.readline() for _ in range(3)]
    pg = next((l for l in lines if l.startswith("postgres listening on ")), None)
    fl = next((l for l in lines if l.startswith("flight listening on ")), None)
    if pg is None or fl is None:
        proc.kill()
        raise SystemExit(f"doors: the service did not start: {lines!r} {(work / 'stderr.log').read_text()[-2000:]}")
    host, port = pg.strip().removeprefix("postgres listening on ").rsplit(":", 1)
    return proc, (host, int(port)), fl.strip().removeprefix("flight listening on ")


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of `pid`, in kB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {k: int(fields[k].split()[0]) for k in ("VmRSS", "VmHWM")}


def sockets(pid: int) -> int:
    fds = Path(f"/proc/{pid}/fd")
    return sum(1 for fd in fds.iterdir() if os.readlink(fd).startswith("socket:"))


def still_answers(pg: tuple[str, int], fl: str) -> None:
    """psycopg and a Flight SQL query after the fuzz."""
    try:
        with psycopg.connect(host=pg[0], port=pg[1], user=KEY, password=SECRET, dbname="eco", sslmode="disable",
                             connect_timeout=10, autocommit=True) as conn:
            n = conn.execute("SELECT count(*) FROM catalog").fetchone()[0]
    except psycopg.Error as e:
        n = e
    check("pg: psycopg answers SELECT count(*) FROM catalog afterwards (4000)", n == 4000, str(n))
    client = flight.FlightClient(f"grpc://{fl}")
    try:
        opts = flight.FlightCallOptions(timeout=10)
        opts = flight.FlightCallOptions(timeout=10, headers=[client.authenticate_basic_token(KEY, SECRET, opts)])
        info = client.get_flight_info(flight.FlightDescriptor.for_command(
            statement_query("SELECT count(*) AS n FROM catalog")), opts)
        n = client.do_get(info.endpoints[0].ticket, opts).read_all().column("n").to_pylist()
    except (flight.FlightError, pa.ArrowException) as e:
        n = e
    finally:
        client.close()
    check("flight: a CommandStatementQuery is answered afterwards ([4000])", n == [4000], str(n))


def log_checks(log: Path) -> None:
    lines = log.read_text(errors="replace").splitlines()
    bad = []
    for line in lines:
        try:
            json.loads(line)
        except ValueError:
            bad.append(line)
    check(f"service: all {len(lines)} lines of standard error are JSON", not bad,
          f"{len(bad)} are not, first: {bad[:3]}")
    panics = [line for line in lines if "panicked" in line]
    check("service: no panic on standard error", not panics, f"{len(panics)} lines, first: {panics[:3]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="the service's binary (target/release/eco-insights)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--pg-sessions", type=int, default=1500)
    parser.add_argument("--flight-calls", type=int, default=300)
    parser.add_argument("--keep", action="store_true", help="leave the scratch folder (export, standard error)")
    args = parser.parse_args()
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="eco-doors-"))
    proc, pg, fl = start_service(args.binary, work)
    try:
        rng = random.Random(args.seed)
        before, sockets_before = memory(proc.pid), sockets(proc.pid)
        sessions = [rng.choice(PG_KINDS)(rng) for _ in range(args.pg_sessions)]
        t = time.monotonic()
        run_pg(pg, sessions)
        print(f"doors: pg {len(sessions)} sessions (seed {args.seed}) in {time.monotonic() - t:.1f} s", flush=True)
        t = time.monotonic()
        results, messages = run_flight(fl, rng, args.flight_calls)
        print(f"doors: flight {len(results)} calls in {time.monotonic() - t:.1f} s", flush=True)
        pg_checks(sessions)
        flight_checks(results, messages, args.flight_calls)
        check("service: the process is alive after the fuzz", proc.poll() is None, f"exit status {proc.poll()}")
        if proc.poll() is None:
            still_answers(pg, fl)
            time.sleep(0.5)
            after, sockets_after = memory(proc.pid), sockets(proc.pid)
            check(f"service: VmRSS {before['VmRSS'] // 1024} -> {after['VmRSS'] // 1024} MB, within 256 MB "
                  f"(VmHWM {after['VmHWM'] // 1024} MB)", after["VmRSS"] <= before["VmRSS"] + 256 * 1024,
                  str(after))
            check(f"service: no socket left open by the fuzz ({sockets_before} -> {sockets_after})",
                  sockets_after <= sockets_before + 2, f"{sockets_before} -> {sockets_after}")
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
    log_checks(work / "stderr.log")
    if args.keep:
        print(f"doors: kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    print(f"doors: {time.monotonic() - started:.1f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
