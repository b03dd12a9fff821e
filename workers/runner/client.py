"""The worker's side of the platform's internal API, with the standard library only.

Calls are retried with back-off while the platform is unreachable (a restarting web server, a
dropped database connection behind it): a worker keeps training through a short outage, and the
platform's reaper decides what a long one means.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("biolm.worker")

RETRY_FOR_S = 120.0
TIMEOUT_S = 60.0


class Conflict(Exception):
    """The platform refused: the delivery does not hold the job (409)."""


class Rejected(Exception):
    """The platform refused the request for good (4xx other than 409); the message is its answer."""


class Unreachable(Exception):
    """The platform did not answer within the retry window."""


@dataclass(frozen=True)
class FileRange:
    """``length`` bytes of ``path`` from ``offset``: one part of a multipart upload, read as it is sent."""

    path: Path
    offset: int
    length: int

    def open(self):
        handle = self.path.open("rb")
        handle.seek(self.offset)
        return _Limited(handle, self.length)


class _Limited:
    """A file read no further than ``left`` bytes (what http.client streams as a request body)."""

    def __init__(self, handle, left: int) -> None:
        self.handle, self.left = handle, left

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        data = self.handle.read(size)
        self.left -= len(data)
        return data

    def close(self) -> None:
        self.handle.close()


@dataclass
class PlatformClient:
    api_url: str  # e.g. http://127.0.0.1:8000/internal/
    token: str
    retry_for_s: float = RETRY_FOR_S

    def _request(
        self, method: str, url: str, body=None, headers: dict | None = None, sink: Path | None = None, auth: bool = True
    ) -> bytes:
        """One call, retried while the platform is unreachable or answers 5xx.

        ``body`` is bytes, or a path (or a :class:`FileRange` of one) whose bytes are streamed, from the
        start on every try; with ``sink`` the answer is streamed to that file and its SHA-256 returned
        (as hex bytes) instead of the answer itself.
        """
        deadline = time.monotonic() + self.retry_for_s
        delay = 0.5
        if isinstance(body, Path):
            body = FileRange(body, 0, body.stat().st_size)
        while True:
            data, extra = body, {}
            if isinstance(body, FileRange):
                data, extra = body.open(), {"Content-Length": str(body.length)}
            request = urllib.request.Request(url, data=data, method=method)
            if auth:
                request.add_header("Authorization", f"Bearer {self.token}")
            for key, value in {**(headers or {}), **extra}.items():
                request.add_header(key, value)
            try:
                with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                    if sink is None:
                        return response.read()
                    digest = hashlib.sha256()
                    with sink.open("wb") as out:
                        for chunk in iter(lambda: response.read(1 << 20), b""):
                            digest.update(chunk)
                            out.write(chunk)
                    return digest.hexdigest().encode()
            except urllib.error.HTTPError as exc:
                answer = exc.read().decode("utf-8", "replace")
                if exc.code == 409:
                    raise Conflict(_detail(answer)) from None
                if exc.code < 500:
                    raise Rejected(f"{method} {url}: {exc.code} {_detail(answer)}") from None
                problem = f"{exc.code} {_detail(answer)}"
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                problem = str(exc)
            finally:
                if isinstance(body, FileRange):
                    data.close()
            if time.monotonic() + delay > deadline:
                raise Unreachable(f"{method} {url}: {problem}")
            logger.warning("%s %s failed (%s); retrying in %.1f s", method, url, problem, delay)
            time.sleep(delay)
            delay = min(delay * 2, 10.0)

    def post(self, path: str, payload: dict, headers: dict | None = None) -> dict:
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", **(headers or {})}
        answer = self._request("POST", self.api_url + path, body, headers)
        return json.loads(answer) if answer else {}

    def upload(self, path: str, file: Path, delivery: str) -> None:
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Disposition": f'attachment; filename="{Path(file).name}"',
            "X-Biolm-Delivery": delivery,
        }
        self._request("PUT", self.api_url + path, Path(file), headers)

    def put(self, url: str, body: bytes | FileRange, headers: dict) -> None:
        """A ``PUT`` to a URL signed for it (a pre-signed object-store URL: no token is sent)."""
        self._request("PUT", url, body, headers, auth=False)

    def download(self, entry: dict, target: Path) -> Path:
        """Fetch one manifest entry to ``target``, streamed, and check its size and SHA-256."""
        target.parent.mkdir(parents=True, exist_ok=True)
        url = entry["url"]
        digest = self._request("GET", url, sink=target, auth=url.startswith(self.api_url)).decode()
        if target.stat().st_size != entry["size"] or digest != entry["sha256"]:
            raise Unreachable(f"{url}: the download does not match its manifest (size or SHA-256)")
        return target


def _detail(answer: str) -> str:
    try:
        return json.loads(answer).get("detail", answer)
    except (json.JSONDecodeError, AttributeError):
        return answer[:500]
