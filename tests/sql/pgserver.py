"""A throwaway PostgreSQL server for tests: Debian's `postgresql` binaries, a cluster made with
`initdb` in a temporary folder, served on a free loopback port and a unix socket in that folder,
stopped (and the folder removed) when the block ends, whatever happens.

    with PgServer() as pg:
        with pg.connect() as conn:
            load_table(conn, "catalog", pyarrow.parquet.read_table(path))

As root (CI), the cluster belongs to the `postgres` user the package creates (initdb refuses to
run as root): the folder is chowned to it and the server runs under its uid. As another user,
the cluster is that user's. The server authenticates nobody (`trust`): it listens on 127.0.0.1
and in its own folder only, and lives as long as the test.
"""

from __future__ import annotations

import ctypes
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import pyarrow as pa
from psycopg import sql

# Settings of a server whose data is thrown away: no durability, no background noise.
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "autovacuum": "off",
    "max_connections": "20",
    "shared_buffers": "64MB",
    "jit": "off",
    "log_min_messages": "warning",
}

# Arrow types as PostgreSQL columns, for load_table.
ARROW_TO_PG = [
    (pa.types.is_boolean, "boolean"),
    (pa.types.is_int8, "smallint"),
    (pa.types.is_int16, "smallint"),
    (pa.types.is_int32, "integer"),
    (pa.types.is_int64, "bigint"),
    (pa.types.is_floating, "double precision"),
    (pa.types.is_decimal, "numeric"),
    (pa.types.is_date, "date"),
    (pa.types.is_timestamp, "timestamp"),
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t), "text"),
    (pa.types.is_dictionary, "text"),
]


def bin_dir() -> Path:
    """The newest installed server's binaries (/usr/lib/postgresql/N/bin), else initdb's folder
    on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    raise RuntimeError("PostgreSQL server binaries not found: install Debian's `postgresql` package")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the server's process before exec: a SIGQUIT (immediate shutdown) when the test process
    dies, so not even a killed test leaves a server behind. Set after the uid change, which
    clears it."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGQUIT)


class PgServer:
    """One cluster in a temporary folder; `start()`/`stop()` or a `with` block."""

    def __init__(self, keep: bool = False, port: int | None = None):
        self.keep = keep
        self.port = port or free_port()
        self.bin = bin_dir()
        self.folder: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.owner = None
        if os.geteuid() == 0:
            try:
                self.owner = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root needs the `postgres` user of Debian's package") from None

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def socket_dir(self) -> Path:
        return self.folder / "socket"

    @property
    def log_path(self) -> Path:
        return self.folder / "server.log"

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}"

    def connect(self, dbname: str = "postgres", **kwargs) -> psycopg.Connection:
        return psycopg.connect(self.conninfo(dbname), autocommit=True, **kwargs)

    def version(self) -> str:
        with self.connect() as conn:
            return conn.execute("SHOW server_version").fetchone()[0]

    def _as_owner(self) -> dict:
        """subprocess keyword arguments that run a command as the cluster's owner."""
        if self.owner is None:
            return {}
        env = dict(os.environ, HOME=self.owner.pw_dir, USER="postgres", LOGNAME="postgres")
        return {"user": self.owner.pw_uid, "group": self.owner.pw_gid, "extra_groups": [], "env": env}

    def start(self, timeout: float = 60) -> "PgServer":
        self.folder = Path(tempfile.mkdtemp(prefix="eco-pgserver-"))
        self.socket_dir.mkdir()
        if self.owner is not None:
            for path in (self.folder, self.socket_dir):
                os.chown(path, self.owner.pw_uid, self.owner.pw_gid)
        try:
            subprocess.run([str(self.bin / "initdb"), "-D", str(self.data_dir), "--locale=C.UTF-8", "-E", "UTF8",
                            "-U", "postgres", "-A", "trust", "--no-sync", "--no-instructions"],
                           check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=120, cwd=self.folder, **self._as_owner())
        except subprocess.CalledProcessError as e:
            self.stop()
            raise RuntimeError(f"initdb failed: {e.stderr.strip()}") from None
        # The port was free when picked; another process may take it before the server binds it.
        for _ in range(3):
            if self._launch(timeout):
                return self
            self.port = free_port()
        self.stop()
        raise RuntimeError(f"postgres could not bind a port:\n{self._log_tail()}")

    def _launch(self, timeout: float) -> bool:
        """Starts the server on self.port and waits until it accepts connections; False when the
        port was taken."""
        args = [str(self.bin / "postgres"), "-D", str(self.data_dir), "-p", str(self.port),
                "-k", str(self.socket_dir)]
        for name, value in SERVER_SETTINGS.items():
            args += ["-c", f"{name}={value}"]
        with open(self.log_path, "w") as log:
            if self.owner is not None:
                os.chown(self.log_path, self.owner.pw_uid, self.owner.pw_gid)
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.folder,
                                         preexec_fn=_die_with_parent, **self._as_owner())
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                if "could not bind" in self._log_tail():
                    return False
                self.stop()
                raise RuntimeError(f"postgres exited at start-up:\n{self._log_tail()}")
            try:
                with psycopg.connect(self.conninfo(), connect_timeout=2):
                    return True
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"postgres not ready after {timeout:.0f} s:\n{self._log_tail()}") from None
                time.sleep(0.1)

    def _log_tail(self) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return ""

    def stop(self) -> None:
        """Fast shutdown (SIGINT), an immediate one if that takes over 30 s; then the folder is
        removed unless kept."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGQUIT)
                self.proc.wait(timeout=30)
        self.proc = None
        if self.folder is not None and not self.keep:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> "PgServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def pg_type(arrow_type: pa.DataType) -> str:
    for test, name in ARROW_TO_PG:
        if test(arrow_type):
            return name
    raise ValueError(f"no PostgreSQL type for Arrow {arrow_type}")


def load_table(conn: psycopg.Connection, name: str, table: pa.Table, types: dict[str, str] | None = None) -> None:
    """Creates table `name` with the Arrow table's columns, in order (types from ARROW_TO_PG,
    or `types[column]`), fills it with COPY and analyzes it."""
    types = types or {}
    ident = sql.Identifier
    columns = sql.SQL(", ").join(
        sql.SQL("{} {}").format(ident(f.name), sql.SQL(types.get(f.name) or pg_type(f.type)))
        for f in table.schema)
    conn.execute(sql.SQL("CREATE TABLE {} ({})").format(ident(name), columns))
    values = [table.column(i).to_pylist() for i in range(table.num_columns)]
    with conn.cursor() as cur:
        with cur.copy(sql.SQL("COPY {} FROM STDIN").format(ident(name))) as copy:
            for row in zip(*values):
                copy.write_row(row)
    conn.execute(sql.SQL("ANALYZE {}").format(ident(name)))
