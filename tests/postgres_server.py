"""A throwaway PostgreSQL server for the tests and the benchmarks: the operating system's binaries,
a new cluster in a temporary folder, a free port on 127.0.0.1, password authentication.

No mock: ``initdb`` and ``pg_ctl`` of the installed ``postgresql`` package run a real server, stopped
and removed at the end. PostgreSQL refuses to run as root; as root (CI, containers) the server runs
as the ``postgres`` system user that the package creates.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = (
    "PostgreSQL server binaries (initdb, pg_ctl) not found: install them to run the PostgreSQL tests "
    "(Debian/Ubuntu: apt-get install postgresql; Fedora: dnf install postgresql-server; macOS: brew install "
    "postgresql), or put their folder on PATH"
)
USER = "relanon_test"


class ServerUnavailable(RuntimeError):
    """The binaries are missing, or the server could not be started (the message says why)."""


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    user: str
    password: str
    folder: Path

    def url(self, database: str = "postgres", *, password: bool = True, driver: str = "postgresql+psycopg",
            query: str = "") -> str:
        secret = f":{self.password}" if password else ""
        return f"{driver}://{self.user}{secret}@{self.host}:{self.port}/{database}{'?' + query if query else ''}"

    def admin(self):
        """A psycopg connection to the ``postgres`` database, in autocommit (for CREATE DATABASE)."""
        import psycopg

        return psycopg.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                               dbname="postgres", autocommit=True)

    def new_database(self, name: str) -> str:
        with self.admin() as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
            connection.execute(f'CREATE DATABASE "{name}"')
        return name


def binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``: on PATH, or the newest Debian/Ubuntu versioned folder."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl", path=str(Path(found).parent)):
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[-3]))
    for initdb in reversed(versions):
        if Path(initdb).with_name("pg_ctl").exists():
            return Path(initdb).parent
    return None


@contextlib.contextmanager
def temporary_server():
    """Start a PostgreSQL server for the duration of the ``with`` block; yield a :class:`Server`."""
    bin_dir = binaries()
    if bin_dir is None:
        raise ServerUnavailable(INSTALL_HINT)
    run_as = {}
    if os.geteuid() == 0:  # initdb and postgres refuse root
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            raise ServerUnavailable("running as root and no 'postgres' user to run the server as") from None
        run_as = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
    folder = Path(tempfile.mkdtemp(prefix="relanon-pg-"))  # in /tmp: reachable by the server's user
    data, password = folder / "data", secrets.token_urlsafe(12)
    (folder / "password").write_text(password + "\n")
    if run_as:
        for path in (folder, folder / "password"):
            os.chown(path, run_as["user"], run_as["group"])
    port = _free_port()

    def run(*command):
        result = subprocess.run([str(bin_dir / command[0]), *command[1:]], capture_output=True, text=True,
                                cwd=folder, timeout=120, **run_as)
        if result.returncode:
            raise ServerUnavailable(f"{command[0]} failed: {(result.stderr or result.stdout).strip()[-2000:]}")

    try:
        run("initdb", "-D", str(data), "-U", USER, f"--pwfile={folder / 'password'}", "--auth=scram-sha-256",
            "-E", "UTF8", "--locale=C", "--no-sync")
        options = (f"-p {port} -h 127.0.0.1 -k {folder} -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=40 -c shared_buffers=64MB")
        run("pg_ctl", "-D", str(data), "-o", options, "-l", str(folder / "server.log"), "-w", "-t", "60", "start")
        try:
            yield Server("127.0.0.1", port, USER, password, folder)
        finally:
            with contextlib.suppress(ServerUnavailable, subprocess.TimeoutExpired):
                run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
