"""Run Debian's ZooKeeper locally: one server or a three-server quorum on loopback.

The library behind ``reassignd zk`` (its command line is :mod:`reassignd.zk`). The server is Debian's ``zookeeper`` package, started with
``java`` and the jars under /usr/share/java (no /etc/zookeeper config is read or changed).
Everything a server needs lives in its data directory: the generated ``zoo.cfg``, the
snapshots and transaction logs, the log file ``zookeeper.log`` and ``state.json`` (pids and
ports), so ``reassignd zk stop``/``status`` in another process find the server again.

From Python::

    zk = LocalZooKeeper(port=0, data_dir="/tmp/zk")   # port 0: pick a free port
    zk.start(timeout=30)
    kazoo_hosts = zk.connect_string                     # "127.0.0.1:41234"
    zk.stop()

    quorum = LocalZooKeeper(port=0, data_dir="/tmp/zk3", ensemble=3)
    quorum.start()
    quorum.kill_member(1)        # SIGKILL one server: the other two keep a quorum
    quorum.restart_member(1)     # and it rejoins
    quorum.stop()
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from znodes.paths import host_port

JAVA_DIR = Path("/usr/share/java")
ZOOKEEPER_JAR = JAVA_DIR / "zookeeper.jar"
NETTY_TLS_JARS = (JAVA_DIR / "netty-codec.jar", JAVA_DIR / "netty-resolver.jar")
# Debian's zookeeper.jar names its dependencies in its manifest Class-Path, but not an SLF4J
# binding; slf4j-simple writes the server's log to stderr, which we send to zookeeper.log.
SLF4J_BINDING_JAR = JAVA_DIR / "slf4j-simple.jar"
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
INSTALL_HINT = "install it with `apt-get install zookeeper openjdk-17-jre-headless` (`make test` installs it)"

DEFAULT_DATA_DIR = "./var/zk"
STATE_FILE = "state.json"
LOG_FILE = "zookeeper.log"
# 200 ms ticks keep session expiry and leader election fast for a local test server;
# production ZooKeeper uses 2000 ms.
DEFAULT_TICK_MS = 200
# Sessions may be as short as 2 ticks (ZooKeeper's own lower bound) for expiry tests, and as
# long as a minute for slow clients.
MAX_SESSION_TIMEOUT_MS = 60_000
# Followers get 10 s to connect and sync to a leader (50 and 25 ticks): generous because the
# three JVMs start together on a small, shared machine.
INIT_LIMIT_TICKS = 50
SYNC_LIMIT_TICKS = 25
# A stopping server gets this long after SIGTERM before SIGKILL.
STOP_GRACE_S = 10.0
# A restarted quorum member waits this long for its ports: the crashed process's sockets and
# its clients' reconnection attempts can hold them for a moment.
PORT_WAIT_ON_RESTART_S = 10.0
# How often the watchdog of a test server looks for its parent process.
WATCHDOG_POLL_S = 0.5
# Four-letter words answer within this time on a healthy server.
FOUR_LETTER_TIMEOUT_S = 2.0


class LauncherError(Exception):
    """Anything that keeps a local ZooKeeper from starting, stopping or reporting."""


@dataclass
class Member:
    """One server of the local deployment and the ports it owns."""

    id: int
    client_port: int
    peer_port: int = 0
    election_port: int = 0
    pid: int = 0

    def dir(self, root: Path, ensemble: int) -> Path:
        return root if ensemble == 1 else root / f"server.{self.id}"


def four_letter_word(host: str, port: int, word: str, timeout: float = FOUR_LETTER_TIMEOUT_S) -> str:
    """Send a ZooKeeper four-letter command (ruok, srvr, stat, mntr) and return the reply."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode("ascii"))
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def server_mode(host: str, port: int) -> str | None:
    """"standalone", "leader" or "follower" when the server serves requests, else None."""
    try:
        reply = four_letter_word(host, port, "srvr")
    except OSError:
        return None
    for line in reply.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def port_is_free(host: str, port: int) -> bool:
    """True if a server could listen on ``port`` (ZooKeeper binds with SO_REUSEADDR, so
    connections lingering in TIME_WAIT after a restart do not count)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # an IPv6 host: ::1, fd00::2
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


# free_port hands out ports below the kernel's ephemeral range (Linux's default 32768-60999),
# where no outgoing connection is given one between the pick and the server's bind, and reserves
# each across processes with a lock file held for this process's life: two runs on one machine
# (two chaos runs, a test run beside `make demo`) never pick the same port. A port the OS gave
# for bind(0) is in the ephemeral range: two chaos runs did clash that way.
PORT_LOCK_DIR = Path(os.environ.get("TMPDIR", "/tmp")) / "reassignd-ports"
PORTS_BELOW_EPHEMERAL = 12_000  # the span of ports just below the ephemeral range tried
_EPHEMERAL_DEFAULT = (32768, 60999)
_reserved: dict[int, int] = {}  # port -> the fd of its lock file, held until the process exits


def ephemeral_range() -> tuple[int, int]:
    """The kernel's ephemeral port range (/proc/sys/net/ipv4/ip_local_port_range)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return _EPHEMERAL_DEFAULT


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on, outside the ephemeral range, reserved for this process (no
    other process calling free_port gets it while this one lives; this one never gets it twice).
    """
    low, high = ephemeral_range()
    first, last = (max(1024, low - PORTS_BELOW_EPHEMERAL), low) if low > 1024 + PORTS_BELOW_EPHEMERAL // 2 else (
        high + 1, min(65536, high + 1 + PORTS_BELOW_EPHEMERAL))
    span = last - first
    start = random.randrange(span)  # runs started together do not walk the same ports in turn
    for i in range(span):
        port = first + (start + i) % span
        if port in _reserved:
            continue
        fd = _lock(port)
        if fd is None:
            continue  # another process holds it
        if port_is_free(host, port):
            _reserved[port] = fd
            return port
        os.close(fd)  # something that is not ours listens there
    raise LauncherError(f"no free port in {first}-{last - 1} on {host}")


def _lock(port: int) -> int | None:
    """The fd of a new exclusive lock on ``port``'s lock file, or None if another process holds it."""
    PORT_LOCK_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(PORT_LOCK_DIR / str(port), os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def reservation(port: int) -> int | None:
    """The fd of this process's lock on ``port`` (free_port's reservation), taken now if nobody
    holds it; None if another process does. A server started with it (``pass_fds``) holds the
    reservation for its own life: `reassignd zk start` returns while ZooKeeper runs on, and a
    follower does not listen on its quorum port until it leads."""
    fd = _reserved.get(port)
    if fd is None:
        fd = _lock(port)
        if fd is not None:
            _reserved[port] = fd
    return fd


def pid_alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie waiting to be reaped."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # Field 3, after the parenthesised command name, is the state; Z is a zombie.
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _pid_runs_config(pid: int, config: Path) -> bool:
    """Guard against pid reuse: the pid must still be a ZooKeeper on our config file."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return MAIN_CLASS.encode() in cmdline and str(config).encode() in cmdline


class LocalZooKeeper:
    """A local ZooKeeper server (``ensemble=1``) or quorum (``ensemble=3``) on loopback.

    ``port`` is the client port of the first server (the others use ``port+1``, ``port+2``);
    ``port=0`` picks free ports. ``fsync=False`` sets ``forceSync=no``: faster, for throwaway
    test servers only. ``stop_with_parent=True`` (test fixtures) starts a small watchdog
    process that stops the servers if the process that started them dies without stopping
    them (killed by a timeout, say), so no server outlives its test run.
    """

    def __init__(
        self,
        port: int = 2181,
        data_dir: str | os.PathLike = DEFAULT_DATA_DIR,
        ensemble: int = 1,
        host: str = "127.0.0.1",
        *,
        tick_ms: int = DEFAULT_TICK_MS,
        fsync: bool = True,
        stop_with_parent: bool = False,
        heap_mb: int = 256,
        java: str | None = None,
        require_auth: bool = False,
        extra_config: dict[str, str] | None = None,
        sasl_users: dict[str, str] | None = None,
    ):
        if ensemble not in (1, 3):
            raise LauncherError(f"ensemble must be 1 or 3 servers, not {ensemble}")
        if not 0 <= port <= 65535 or (port and port + ensemble - 1 > 65535):
            raise LauncherError(f"port {port} is out of range")
        if tick_ms <= 0:
            raise LauncherError(f"tick_ms must be positive, not {tick_ms}")
        self.port = port
        self.data_dir = Path(data_dir).absolute()
        self.ensemble = ensemble
        self.host = host
        self.tick_ms = tick_ms
        self.fsync = fsync
        self.stop_with_parent = stop_with_parent
        self.heap_mb = heap_mb
        # ZooKeeper 3.7+'s enforce.auth: a session that has not authenticated (digest) may do
        # nothing, so tests run the secured path for real.
        self.require_auth = require_auth
        # More zoo.cfg lines, e.g. a TLS client port (secureClientPort, ssl.keyStore.*).
        self.extra_config = dict(extra_config or {})
        # SASL DIGEST-MD5 users (name -> password): a JAAS Server section and the SASL
        # authentication provider, as Kafka's ZooKeeper documentation sets them up.
        self.sasl_users = dict(sasl_users or {})
        self.java = java or shutil.which("java") or "/usr/bin/java"
        self.members: list[Member] = []
        self._procs: dict[int, subprocess.Popen] = {}
        self._log_files: dict[int, object] = {}
        self._watchdog: subprocess.Popen | None = None

    # ---- public API ------------------------------------------------------------------------

    @property
    def connect_string(self) -> str:
        """kazoo/Kafka connect string, e.g. "127.0.0.1:2181" or three comma-separated hosts."""
        if not self.members:
            self._load_state()
        return ",".join(host_port(self.host, m.client_port) for m in self.members)

    def start(self, timeout: float = 60.0, *, port_wait: float = 0.0) -> "LocalZooKeeper":
        """Start the server(s) and wait until they serve requests (a quorum has a leader).

        ``port_wait``: how long a busy port may take to free up (restarting on the ports of
        a server just stopped, while its clients keep knocking); 0 fails at once.
        """
        self._check_installed()
        existing = self._read_state()
        if existing is not None and any(pid_alive(s["pid"]) for s in existing["servers"]):
            raise LauncherError(f"a ZooKeeper already runs from {self.data_dir} (see `reassignd zk status`)")
        self.members = self._plan_members()
        for m in self.members:
            self._wait_ports_free(m, port_wait)
        try:
            for m in self.members:
                self._write_config(m)
                self._spawn(m)
            self._write_state()
            if self.stop_with_parent:
                self._start_watchdog()
            self._wait_serving(self.members, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, grace: float = STOP_GRACE_S) -> bool:
        """Stop every server: SIGTERM, then SIGKILL after ``grace`` seconds.

        Returns False if nothing was running. Works from another process via state.json.
        """
        if not self.members:
            self._load_state()
        stopped = False
        for m in self.members:
            stopped |= self._stop_member(m, grace)
        self._close_logs()
        if self._watchdog is not None:
            self._watchdog.terminate()
            self._watchdog.wait()
            self._watchdog = None
        state = self.data_dir / STATE_FILE
        if state.exists():
            state.unlink()
        return stopped

    def status(self) -> dict:
        """Liveness of each server: ``{"running": bool, "servers": [{id, port, pid, alive, mode}]}``."""
        if not self.members:
            self._load_state()
        servers = []
        for m in self.members:
            alive = pid_alive(m.pid)
            servers.append(
                {
                    "id": m.id,
                    "client_port": m.client_port,
                    "pid": m.pid,
                    "alive": alive,
                    "mode": server_mode(self.host, m.client_port) if alive else None,
                }
            )
        return {
            "running": bool(servers) and any(s["mode"] for s in servers),
            "connect_string": ",".join(f"{self.host}:{s['client_port']}" for s in servers),
            "data_dir": str(self.data_dir),
            "servers": servers,
        }

    def kill_member(self, member_id: int) -> None:
        """SIGKILL one server of the quorum (a crash, for failover tests)."""
        m = self._member(member_id)
        if pid_alive(m.pid):
            os.kill(m.pid, signal.SIGKILL)
            self._wait_gone(m, STOP_GRACE_S)

    def restart_member(self, member_id: int, timeout: float = 60.0) -> None:
        """Start a killed or stopped server again and wait until it serves."""
        m = self._member(member_id)
        if pid_alive(m.pid):
            raise LauncherError(f"server {member_id} still runs (pid {m.pid})")
        self._wait_ports_free(m, PORT_WAIT_ON_RESTART_S)
        self._spawn(m)
        self._write_state()
        self._wait_serving([m], timeout)

    def __enter__(self) -> "LocalZooKeeper":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- internals -------------------------------------------------------------------------

    def _check_installed(self) -> None:
        if not ZOOKEEPER_JAR.exists():
            raise LauncherError(f"ZooKeeper is not installed ({ZOOKEEPER_JAR} is missing): {INSTALL_HINT}")
        if not (os.path.isfile(self.java) and os.access(self.java, os.X_OK)):
            raise LauncherError(f"java is not installed ({self.java} not found): {INSTALL_HINT}")

    def _plan_members(self) -> list[Member]:
        if self.ensemble == 1:
            return [Member(1, self.port or free_port(self.host))]
        members = []
        for i in range(1, self.ensemble + 1):
            client = self.port + i - 1 if self.port else free_port(self.host)
            members.append(Member(i, client, free_port(self.host), free_port(self.host)))
        return members

    def _wait_ports_free(self, m: Member, wait: float) -> None:
        deadline = time.monotonic() + wait
        for p in (m.client_port, m.peer_port, m.election_port):
            while p and not port_is_free(self.host, p):
                if time.monotonic() >= deadline:
                    raise LauncherError(f"port {p} on {self.host} is already in use")
                time.sleep(0.1)

    def _member(self, member_id: int) -> Member:
        if not self.members:
            self._load_state()
        for m in self.members:
            if m.id == member_id:
                return m
        raise LauncherError(f"no server {member_id} in {self.data_dir}")

    def _config_path(self, m: Member) -> Path:
        return m.dir(self.data_dir, self.ensemble) / "zoo.cfg"

    def _write_config(self, m: Member) -> None:
        home = m.dir(self.data_dir, self.ensemble)
        data = home / "data"
        data.mkdir(parents=True, exist_ok=True)
        lines = [
            f"tickTime={self.tick_ms}",
            f"dataDir={data}",
            f"clientPort={m.client_port}",
            f"clientPortAddress={self.host}",
            f"minSessionTimeout={2 * self.tick_ms}",
            f"maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}",
            # ruok/srvr are how start() and status() see the server; no other words are needed.
            "4lw.commands.whitelist=ruok,srvr,stat,mntr",
            # The Jetty admin server would take port 8080 and clash between servers.
            "admin.enableServer=false",
            f"forceSync={'yes' if self.fsync else 'no'}",
            # Keep the data dir from growing without bound in long local runs.
            "autopurge.snapRetainCount=3",
            "autopurge.purgeInterval=1",
        ]
        if self.sasl_users:
            lines.append("authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
        if self.require_auth:
            lines += ["enforce.auth.enabled=true", "enforce.auth.schemes=" + ("digest,sasl" if self.sasl_users else "digest")]
        lines += [f"{key}={value}" for key, value in self.extra_config.items()]
        if self.ensemble > 1:
            lines += [f"initLimit={INIT_LIMIT_TICKS}", f"syncLimit={SYNC_LIMIT_TICKS}"]
            for peer in self.members:
                lines.append(f"server.{peer.id}={self.host}:{peer.peer_port}:{peer.election_port}")
            (data / "myid").write_text(f"{m.id}\n")
        (home / "zoo.cfg").write_text("\n".join(lines) + "\n")

    def _jaas_path(self, m: Member) -> Path:
        path = m.dir(self.data_dir, self.ensemble) / "jaas.conf"
        users = "".join(f'\n    user_{name}="{password}"' for name, password in self.sasl_users.items())
        path.write_text(f"Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required{users};\n}};\n")
        path.chmod(0o600)  # it holds passwords
        return path

    def _classpath(self) -> str:
        jars = [ZOOKEEPER_JAR]
        if SLF4J_BINDING_JAR.exists():
            jars.append(SLF4J_BINDING_JAR)
        if "secureClientPort" in self.extra_config:
            # TLS needs the Netty server, whose codec and resolver jars Debian's zookeeper.jar
            # manifest does not name.
            jars += [j for j in NETTY_TLS_JARS if j.exists()]
        return ":".join(str(j) for j in jars)

    def _spawn(self, m: Member) -> None:
        home = m.dir(self.data_dir, self.ensemble)
        log = open(home / LOG_FILE, "ab")
        cmd = [
            self.java,
            *([f"-Djava.security.auth.login.config={self._jaas_path(m)}"] if self.sasl_users else []),
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",  # fewer GC threads on a small shared machine
            "-Djava.awt.headless=true",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-cp",
            self._classpath(),
            MAIN_CLASS,
            str(self._config_path(m)),
        ]
        # A new session: `reassignd zk start` returns while the server keeps running, and a
        # Ctrl-C in the caller's terminal does not reach it.
        # The server inherits its ports' reservations (free_port), so that they outlive this process.
        held = [fd for p in (m.client_port, m.peer_port, m.election_port) if p and (fd := reservation(p)) is not None]
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=home,
            start_new_session=True,
            pass_fds=held,
        )
        m.pid = proc.pid
        self._procs[m.id] = proc
        self._log_files[m.id] = log

    def _wait_serving(self, members: list[Member], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        pending = list(members)
        while pending:
            for m in list(pending):
                proc = self._procs.get(m.id)
                if proc is not None and proc.poll() is not None:
                    raise LauncherError(
                        f"ZooKeeper server {m.id} exited with code {proc.returncode} while starting; "
                        f"log tail:\n{self._log_tail(m)}"
                    )
                if self._answers_imok(m) and server_mode(self.host, m.client_port):
                    pending.remove(m)
            if not pending:
                return
            if time.monotonic() > deadline:
                raise LauncherError(
                    f"ZooKeeper did not serve within {timeout:.0f}s on "
                    f"{', '.join(str(m.client_port) for m in pending)}; log tail:\n{self._log_tail(pending[0])}"
                )
            time.sleep(0.05)

    def _answers_imok(self, m: Member) -> bool:
        try:
            return four_letter_word(self.host, m.client_port, "ruok", timeout=0.5) == "imok"
        except OSError:
            return False

    def _log_tail(self, m: Member, lines: int = 15) -> str:
        path = m.dir(self.data_dir, self.ensemble) / LOG_FILE
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _stop_member(self, m: Member, grace: float) -> bool:
        if not m.pid or not pid_alive(m.pid):
            self._reap(m)
            return False
        if m.id not in self._procs and not _pid_runs_config(m.pid, self._config_path(m)):
            # The recorded pid now belongs to some other process: leave it alone.
            return False
        try:
            os.kill(m.pid, signal.SIGTERM)
        except ProcessLookupError:
            return False
        if not self._wait_gone(m, grace):
            try:
                os.kill(m.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._wait_gone(m, grace)
        return True

    def _wait_gone(self, m: Member, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._reap(m)
            if not pid_alive(m.pid):
                return True
            time.sleep(0.02)
        return False

    def _reap(self, m: Member) -> None:
        proc = self._procs.get(m.id)
        if proc is not None and proc.poll() is not None:
            self._procs.pop(m.id, None)

    def _start_watchdog(self) -> None:
        project_root = str(Path(__file__).resolve().parents[1])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [project_root, os.environ.get("PYTHONPATH")])))
        self._watchdog = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from znodes.launcher import watchdog_main; watchdog_main(sys.argv[1], int(sys.argv[2]))",
                str(self.data_dir),
                str(os.getpid()),
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # a signal to our process group must not take it down too
        )

    def _close_logs(self) -> None:
        for f in self._log_files.values():
            f.close()
        self._log_files.clear()

    def _write_state(self) -> None:
        state = {
            "version": 1,
            "host": self.host,
            "ensemble": self.ensemble,
            "servers": [asdict(m) for m in self.members],
        }
        path = self.data_dir / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        tmp.replace(path)

    def _read_state(self) -> dict | None:
        path = self.data_dir / STATE_FILE
        try:
            state = json.loads(path.read_text())
            if not isinstance(state, dict) or state.get("version") != 1:
                raise ValueError("unknown state version")
            for s in state["servers"]:
                for key in ("id", "client_port", "peer_port", "election_port", "pid"):
                    if not isinstance(s[key], int):
                        raise ValueError(f"{key} is not an integer")
            if state["ensemble"] not in (1, 3) or not isinstance(state["host"], str):
                raise ValueError("bad ensemble or host")
            return state
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise LauncherError(f"{path} is unreadable ({e}); remove it if no server runs") from None

    def _load_state(self) -> None:
        state = self._read_state()
        if state is None:
            self.members = []
            return
        self.host = state["host"]
        self.ensemble = state["ensemble"]
        self.members = [Member(**s) for s in state["servers"]]


def watchdog_main(data_dir: str, parent_pid: int) -> None:
    """Stop the servers recorded in ``data_dir`` once ``parent_pid`` (their starter) is gone.

    Runs in its own process. Ends quietly when the servers are stopped normally (the state
    file goes away) or when its parent stops it.
    """
    state = Path(data_dir) / STATE_FILE
    # Our parent is the starter: when it dies we are re-parented and getppid() changes.
    while os.getppid() == parent_pid and state.exists():
        time.sleep(WATCHDOG_POLL_S)
    if os.getppid() != parent_pid and state.exists():
        try:
            LocalZooKeeper(data_dir=data_dir).stop(grace=STOP_GRACE_S)
        except LauncherError:
            pass
