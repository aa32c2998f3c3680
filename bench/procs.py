"""The service's processes in the bench scripts (standard library only): started, waited for,
measured and stopped. Shared by `run.py` (`make bench`) and `alternate.py`."""

import http.client
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADERS = {"X-API-Key": "demo-key", "X-API-Secret": "demo-secret"}


class Server:
    """A server process that prints `listening on http://HOST:PORT` when ready (waited for
    unless `wait` is false: then call `wait_listening`)."""

    def __init__(self, argv, cwd=REPO, timeout=300, cores=None, wait=True):
        self.stderr = tempfile.TemporaryFile("w+")
        if cores is not None:
            # taskset execs the service: the pid is the service's own.
            argv = ["taskset", "-c", cpu_list(cores)] + list(argv)
        self.argv = argv
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        if wait:
            self.wait_listening(timeout)

    def wait_listening(self, timeout=300):
        """Waits for the line the service prints once its API serves; keeps its address."""
        argv = self.argv
        first = []
        reader = threading.Thread(target=lambda: first.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        line = first[0] if first else ""
        m = re.match(r"listening on http://([\d.]+):(\d+)", line.strip())
        if not m:
            self.stop()
            raise RuntimeError(f"{' '.join(argv)} did not start: {line!r}\n{self.stderr_tail()}")
        self.host, self.port = m.group(1), int(m.group(2))
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def stderr_tail(self, lines=20):
        self.stderr.seek(0)
        return "".join(self.stderr.readlines()[-lines:])

    @property
    def url(self):
        return f"http://{self.host}:{self.port}"

    def status_bytes(self, field):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def cpu_seconds(self):
        """User plus system CPU time the service has used so far: all its threads, and its
        running children's (the SQL workers answering meanwhile, the tables written ahead)."""
        def stat(pid):
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()
        try:
            fields = stat(self.proc.pid)
        except OSError:
            return None
        ticks = int(fields[11]) + int(fields[12])
        for entry in os.listdir("/proc"):
            if entry.isdigit() and entry != str(self.proc.pid):
                try:
                    child = stat(entry)
                except OSError:
                    continue
                if child[1] == str(self.proc.pid):
                    ticks += int(child[11]) + int(child[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def load_phases(self):
        """The phases of the first load as the service logged them (`dataset built`, JSON logs),
        in ms; empty when the log holds no such line."""
        self.stderr.seek(0)
        for line in self.stderr:
            if '"dataset built"' not in line:
                continue
            try:
                event = json.loads(line)
                fields = event.get("fields", event)
            except ValueError:
                continue
            phases = {k[:-3]: v for k, v in fields.items() if k.endswith("_ms")}
            phases.update({k: v for k, v in fields.items() if k.endswith("_faults")})
            return phases
        return {}

    def rss_bytes(self):
        return self.status_bytes("VmRSS")

    def reset_peak_rss(self):
        """Resets VmHWM (the kernel's exact peak RSS) to the current RSS; False if unsupported."""
        try:
            with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def check_alive(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"the server exited with {self.proc.returncode}\n{self.stderr_tail()}")


def free_port():
    """A TCP port free on loopback now (for a service whose address must be known before it
    says it listens)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(conn, path, headers=HEADERS):
    conn.request("GET", path, headers=headers)
    res = conn.getresponse()
    body = res.read()
    return res.status, body


def wait_ready(server, timeout=300):
    """Polls the catalog until it answers 200; returns seconds since the process started."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        server.check_alive()
        try:
            conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
            status, _ = get(conn, "/catalog/vehicles?page_size=1")
            conn.close()
            if status == 200:
                return time.perf_counter() - server.started
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError("the service never answered")

def cpu_list(cores):
    """taskset's list of CPU numbers."""
    return ",".join(str(c) for c in cores)
