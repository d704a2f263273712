"""Real servers on loopback for the remote-file tests: nginx, a scripted Python server, moto S3.

Every server here listens on 127.0.0.1 only, serves files from a temporary folder, logs each
request it answers (method, path, Range, status, bytes sent) and stops when its ``with`` block
ends. No request ever leaves the machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


@dataclass
class Request:
    method: str
    path: str
    range: str | None
    status: int
    sent: int


def parse_range(text: str | None, size: int) -> tuple[int, int] | None:
    """``bytes=a-b`` → ``(a, b + 1)`` clipped to ``size``; None for no or unusable Range."""
    m = re.fullmatch(r"bytes=(\d*)-(\d*)", text or "")
    if not m or (not m[1] and not m[2]):
        return None
    if not m[1]:
        return max(0, size - int(m[2])), size
    start = int(m[1])
    stop = min(size, int(m[2]) + 1) if m[2] else size
    return start, stop


class ScriptedServer:
    """A range-capable HTTP/1.1 file server whose misbehaviour tests can script.

    ``faults`` is a list consumed one entry per GET: ``None`` (answer properly), an HTTP
    status to answer instead (``503``, ``429``), ``"reset"`` (close the connection without an
    answer), ``"short"`` (a 206 whose body stops halfway, then the connection closes),
    ``"stall"`` (accept, then say nothing for ``stall_seconds``). ``ignore_range`` answers every
    GET with 200 and the whole file; ``multirange`` says how multi-range requests are met.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.faults: list[object] = []
        self.ignore_range = False
        #: how multi-range GETs are answered: None (200, whole file), "parts" (multipart
        #: byteranges) or "merge" (one 206 part spanning all the ranges)
        self.multirange: str | None = None
        self.stall_seconds = 10.0
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self.port = 0
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def gets(self, name: str) -> list[Request]:
        return [r for r in self.requests if r.method == "GET" and r.path == "/" + name]

    def __enter__(self) -> ScriptedServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _log(self, status: int, sent: int) -> None:
                with server._lock:
                    server.requests.append(
                        Request(self.command, self.path, self.headers.get("Range"), status, sent)
                    )

            def _file(self) -> Path | None:
                path = (server.root / self.path.lstrip("/")).resolve()
                if server.root.resolve() not in path.parents or not path.is_file():
                    self._log(404, 0)
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                return path

            def _etag(self, path: Path) -> str:
                st = path.stat()
                digest = hashlib.md5(f"{st.st_size}-{st.st_mtime_ns}".encode()).hexdigest()
                return f'"{digest}"'

            def do_HEAD(self) -> None:
                path = self._file()
                if path is None:
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(path.stat().st_size))
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("ETag", self._etag(path))
                self._log(200, 0)
                self.end_headers()

            def do_GET(self) -> None:
                with server._lock:
                    fault = server.faults.pop(0) if server.faults else None
                if fault == "reset":
                    self._log(0, 0)
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault == "stall":
                    self._log(0, 0)
                    time.sleep(server.stall_seconds)
                    self.close_connection = True
                    return
                if isinstance(fault, int):
                    self._log(fault, 0)
                    self.send_response(fault)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path = self._file()
                if path is None:
                    return
                data = path.read_bytes()
                size = len(data)
                header = self.headers.get("Range") or ""
                if "," in header and server.multirange and not server.ignore_range:
                    self._multi(path, data, header)
                    return
                span = None if server.ignore_range else parse_range(header, size)
                if span is None:
                    status, body = 200, data
                elif span[0] >= size:
                    self._log(416, 0)
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                else:
                    status, body = 206, data[span[0] : span[1]]
                sent = len(body) // 2 if fault == "short" else len(body)
                # Logged before answering: a test reads the log as soon as it has the answer.
                self._log(status, sent)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", self._etag(path))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {span[0]}-{span[1] - 1}/{size}")
                self.end_headers()
                if fault == "short":
                    body = body[:sent]
                    self.close_connection = True
                try:
                    self.wfile.write(body)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on the body (e.g. a 200 it did not want)

            def _multi(self, path: Path, data: bytes, header: str) -> None:
                size = len(data)
                spans = [parse_range("bytes=" + p, size) for p in header[6:].split(",")]
                if server.multirange == "merge":  # one part covering every range asked for
                    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
                    body = data[lo:hi]
                    ctype, extra = "application/fits", f"bytes {lo}-{hi - 1}/{size}"
                else:
                    parts = []
                    for a, b in spans:
                        parts.append(
                            f"--SEP\r\nContent-Type: application/fits\r\n"
                            f"Content-Range: bytes {a}-{b - 1}/{size}\r\n\r\n".encode()
                            + data[a:b]
                            + b"\r\n"
                        )
                    body = b"".join(parts) + b"--SEP--\r\n"
                    ctype, extra = "multipart/byteranges; boundary=SEP", None
                self._log(206, len(body))
                self.send_response(206)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", self._etag(path))
                if extra:
                    self.send_header("Content-Range", extra)
                self.end_headers()
                self.wfile.write(body)

        # Port 0: the kernel picks a free port at bind time, so no other process (another
        # pytest-xdist worker) can take it between choosing and binding.
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._httpd.server_address[1]
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()


_NGINX_CONF = """\
{user}
worker_processes 1;
error_log {prefix}/error.log;
pid {prefix}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    access_log off;
    log_format dfits '$request_method $uri $status $body_bytes_sent "$http_range"';
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    types {{ application/fits fits; }}
    server {{
        listen 127.0.0.1:{port};
        root {root};
        access_log {prefix}/access.log dfits;
        etag on;
    }}
}}
"""


class Nginx:
    """nginx (from the system packages) serving ``root`` on a free loopback port."""

    def __init__(self, root: Path, prefix: Path) -> None:
        self.root = Path(root).resolve()
        self.prefix = Path(prefix).resolve()
        self.port = 0
        self._proc: subprocess.Popen | None = None

    @staticmethod
    def available() -> str | None:
        return shutil.which("nginx") or next(
            (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)),
            None,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Nginx:
        binary = self.available()
        assert binary, "nginx is not installed"
        self.prefix.mkdir(parents=True, exist_ok=True)
        # nginx must be told its port, so it is chosen before nginx binds it and another process
        # (a pytest-xdist worker) may take it meanwhile: then nginx exits and we try another.
        for _ in range(5):
            self.port = free_port()
            err = self._start(binary)
            if err is None:
                return self
            if "Address already in use" not in err:
                break
        raise RuntimeError(f"nginx did not start: {err}")

    def _start(self, binary: str, timeout: float = 10.0) -> str | None:
        """Start nginx on ``self.port``; None once it listens, else what it said on exit."""
        # Worker processes drop to 'nobody' when started as root; they must read the files.
        user = "user root;" if os.geteuid() == 0 else ""
        conf = self.prefix / "nginx.conf"
        conf.write_text(
            _NGINX_CONF.format(user=user, prefix=self.prefix, port=self.port, root=self.root)
        )
        pid = self.prefix / "nginx.pid"
        pid.unlink(missing_ok=True)
        self._proc = subprocess.Popen(
            [binary, "-c", str(conf), "-p", str(self.prefix), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        # nginx writes its pid file only after binding its port: a connection alone could reach
        # whichever other server took the port first.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._proc.poll() is None and not pid.exists():
            time.sleep(0.02)
        if self._proc.poll() is None and pid.exists():
            wait_for_port(self.port)
            return None
        self._proc.kill()
        return self._proc.communicate()[1].decode(errors="replace") or "no pid file"

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None
        self._proc.terminate()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()

    @property
    def requests(self) -> list[Request]:
        out = []
        log = self.prefix / "access.log"
        for line in log.read_text().splitlines() if log.exists() else []:
            m = re.fullmatch(r'(\S+) (\S+) (\d+) (\d+) "(.*)"', line)
            if m:
                rng = None if m[5] in ("", "-") else m[5]
                out.append(Request(m[1], m[2], rng, int(m[3]), int(m[4])))
        return out

    def gets(self, name: str) -> list[Request]:
        # nginx writes a log line once the answer is sent; give the last one a moment.
        time.sleep(0.05)
        return [r for r in self.requests if r.method == "GET" and r.path == "/" + name]


class MotoS3:
    """moto's S3 server on a free loopback port, with one bucket."""

    def __init__(self, bucket: str = "dfits-test") -> None:
        self.bucket = bucket
        self.port = 0
        self._server = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def storage_options(self) -> dict:
        return {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": self.endpoint, "region_name": "us-east-1"},
        }

    def __enter__(self) -> MotoS3:
        from moto.server import ThreadedMotoServer

        # Port 0, read back once bound: a port chosen before binding could be taken meanwhile,
        # and ThreadedMotoServer.start() waits forever when its bind fails.
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        self.port = self._server.get_host_and_port()[1]
        wait_for_port(self.port)
        import boto3

        boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        ).create_bucket(Bucket=self.bucket)
        return self

    def filesystem(self):
        import s3fs

        return s3fs.S3FileSystem(skip_instance_cache=True, **self.storage_options)

    def put(self, name: str, data: bytes) -> str:
        fs = self.filesystem()
        fs.pipe(f"{self.bucket}/{name}", data)
        return f"s3://{self.bucket}/{name}"

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.stop()
