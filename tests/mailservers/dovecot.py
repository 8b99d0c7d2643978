"""A private Dovecot 2.3 (IMAP + LMTP) for the tests: its own config, users, mail, sockets and log
under one directory, IMAP on a free loopback port (plain text; TLS too on request), LMTP on a
unix socket. It runs as root (login processes chroot and switch users); the mail belongs to
``nobody``, so the root directory and every directory above it must let that user through.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DOVECOT_CANDIDATES = ("/usr/sbin/dovecot", "/usr/local/sbin/dovecot")
PROTOCOL_BINARIES = ("imap", "imap-login", "lmtp")  # from dovecot-imapd and dovecot-lmtpd
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; Dovecot's longest socket name under base_dir is ~25

CONFIG = """\
# Written by tests/mailservers/dovecot.py for one test run.
protocols = imap lmtp
listen = 127.0.0.1
instance_name = {instance}
base_dir = {run}
state_dir = {state}
log_path = {log}
info_log_path = {log}
{ssl}
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_cache_size = 0
auth_failure_delay = 0
auth_username_format = %Lu
mail_location = maildir:{mail}/%d/%n
mail_uid = {uid}
mail_gid = {gid}
first_valid_uid = {uid}
first_valid_gid = {gid}
recipient_delimiter = +
lmtp_save_to_detail_mailbox = no
imap_idle_notify_interval = 2 secs
mailbox_idle_check_interval = 1 secs
passdb {{
  driver = passwd-file
  args = scheme=PLAIN {users}/%d/%n
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={mail}/%d/%n
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps_port}
  }}
}}
service lmtp {{
  unix_listener lmtp {{
    mode = 0666
  }}
}}
"""


def find_dovecot() -> str | None:
    return shutil.which("dovecot") or next((p for p in DOVECOT_CANDIDATES if os.access(p, os.X_OK)), None)


def dovecot_available() -> str | None:
    """None when a private Dovecot can run here, else the reason (for a skip message)."""
    binary = find_dovecot()
    if binary is None:
        return "Dovecot is not installed (apt-get install dovecot-imapd dovecot-lmtpd)"
    if os.geteuid() != 0:
        return "a private Dovecot needs root here (its login processes chroot and switch users)"
    libexec = Path("/usr/lib/dovecot")
    missing = [name for name in PROTOCOL_BINARIES if not (libexec / name).exists()]
    if missing:
        return f"Dovecot lacks {', '.join(missing)} (install dovecot-imapd and dovecot-lmtpd)"
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        return "there is no 'nobody' user to own the test mail"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def group_signal(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


def mail_owner() -> tuple[int, int]:
    """Dovecot never gives mail access to uid 0: the test mail belongs to nobody."""
    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


def check_reachable(root: Path) -> None:
    """Dovecot's unprivileged processes must traverse every directory down to root."""
    for directory in root.parents:
        if not directory.stat().st_mode & 0o001:
            raise PermissionError(
                f"{directory} is not traversable by other users, so Dovecot's mail user cannot reach "
                f"{root}: start the mail servers in a directory made by tempfile.mkdtemp()")


class Dovecot:
    """One Dovecot master process (run in the foreground, so it is our child) and its files."""

    def __init__(self, root: Path, imap_port: int, imaps_port: int | None = None) -> None:
        """imaps_port: also serve TLS (implicit on that port, STARTTLS on imap_port) with a
        self-signed certificate for 127.0.0.1 and localhost, written to root/cert.pem."""
        self.root, self.imap_port, self.imaps_port = root, imap_port, imaps_port
        self.cert = root / "cert.pem"
        self.run_dir, self.mail_dir = root / "run", root / "mail"
        self.config, self.users, self.log = root / "dovecot.conf", root / "users", root / "dovecot.log"
        self.lmtp_socket = self.run_dir / "lmtp"
        self.uid, self.gid = mail_owner()
        self.process: subprocess.Popen | None = None
        if len(str(self.lmtp_socket)) + 25 > SOCKET_PATH_MAX:
            raise ValueError(f"{root} is too long a path for Dovecot's unix sockets; use a shorter one")

    def write_config(self) -> None:
        check_reachable(self.root)
        self.root.chmod(0o755)
        for directory in (self.run_dir, self.root / "state"):
            directory.mkdir(exist_ok=True)
        self.mail_dir.mkdir(exist_ok=True)
        os.chown(self.mail_dir, self.uid, self.gid)
        self.users.mkdir(exist_ok=True)
        ssl = "ssl = no"
        if self.imaps_port:
            self.make_certificate()
            ssl = f"ssl = yes\nssl_cert = <{self.cert}\nssl_key = <{self.root / 'key.pem'}"
        self.config.write_text(CONFIG.format(
            instance=f"avalon-test-{self.imap_port}", run=self.run_dir, state=self.root / "state",
            log=self.log, mail=self.mail_dir, uid=self.uid, gid=self.gid, users=self.users,
            imap_port=self.imap_port, imaps_port=self.imaps_port or 0, ssl=ssl))

    def make_certificate(self) -> None:
        openssl = shutil.which("openssl")
        if openssl is None:
            raise RuntimeError("openssl is needed for the TLS mail server (apt-get install openssl)")
        subprocess.run(
            [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-days", "2", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
             "-keyout", str(self.root / "key.pem"), "-out", str(self.cert)],
            check=True, capture_output=True)

    def add_user(self, address: str, password: str) -> None:
        """Write the user's passwd-file and make the maildir. One file per user: Dovecot reads a new
        file at the first lookup, whereas it re-reads a changed one at most once a second."""
        if any(c in password + address for c in ":\n/"):
            raise ValueError("':', '/' and newlines cannot appear in a passwd-file entry")
        local, _, domain = address.lower().partition("@")
        (self.users / domain).mkdir(exist_ok=True)
        entry = self.users / domain / local
        entry.write_text(f"{address.lower()}:{{PLAIN}}{password}\n")
        for path in (self.mail_dir / domain, self.mail_dir / domain / local):
            path.mkdir(exist_ok=True)
            os.chown(path, self.uid, self.gid)
        for sub in ("cur", "new", "tmp"):
            (self.mail_dir / domain / local / sub).mkdir(exist_ok=True)
            os.chown(self.mail_dir / domain / local / sub, self.uid, self.gid)

    def deliver_directly(self, address: str, raw: bytes) -> None:
        local, _, domain = address.partition("@")
        maildir = self.mail_dir / domain / local
        name = f"{time.time_ns()}.P{os.getpid()}.avalon-test"
        staged = maildir / "tmp" / name
        staged.write_bytes(raw)
        os.chown(staged, self.uid, self.gid)
        staged.rename(maildir / "new" / name)  # maildir delivery: write in tmp/, rename into new/

    def start(self, timeout: float = 15.0) -> None:
        """Start the master and wait until IMAP answers and the LMTP socket exists."""
        if self.process is not None and self.process.poll() is None:
            return
        binary = find_dovecot()
        assert binary, "Dovecot is not installed"
        deadline = time.monotonic() + timeout
        while True:
            self.process = subprocess.Popen(  # its own process group: stop() signals all at once
                [binary, "-F", "-c", str(self.config)], start_new_session=True, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=(self.root / "dovecot.stderr").open("ab"))
            if self._wait_ready(deadline):
                return
            code = self.process.poll()
            self.stop()
            if code is None or time.monotonic() > deadline:  # hung, or kept failing (port still held?)
                raise RuntimeError(f"Dovecot did not start (exit {code}):\n{self.log_tail()}")
            time.sleep(0.2)  # e.g. the port from the last run still closing: try again

    def _wait_ready(self, deadline: float) -> bool:
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if self.lmtp_socket.exists():
                try:
                    with socket.create_connection(("127.0.0.1", self.imap_port), timeout=1) as s:
                        if s.recv(200).startswith(b"* OK"):
                            return True
                except OSError:
                    pass
            time.sleep(0.02)
        return False

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the master and its children (their clients get a BYE), then SIGKILL what is left
        after 0.2 s: with a client logged in, the master lingers a second holding the IMAP port
        open, which a test would take for a server still up. The mail stays on disk."""
        process, self.process = self.process, None
        if process is None:
            return
        group_signal(process.pid, signal.SIGTERM)
        try:
            process.wait(0.2)
        except subprocess.TimeoutExpired:
            group_signal(process.pid, signal.SIGKILL)
            process.wait(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._imap_port_answers():
            time.sleep(0.02)

    def _imap_port_answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.imap_port), timeout=0.2):
                return True
        except OSError:
            return False

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        texts = [p.read_text(errors="replace") for p in (self.log, self.root / "dovecot.stderr") if p.exists()]
        return "\n".join("\n".join(text.splitlines()[-lines:]) for text in texts if text)
