"""A Hugging Face Hub stand-in, on a free port of this machine, for the tests of submissions by Hub id.

The Hub lies outside this machine (and the tests run with ``HF_HUB_OFFLINE=1`` otherwise), so this is
the one place a stand-in is right. It answers the routes ``huggingface_hub`` itself calls, in the Hub's
own forms, headers included, so the library's own error mapping is what the platform meets:

* ``GET /api/models/{org}/{name}/revision/{revision}``: ``model_info`` (``blobs=true``: each file's size);
* ``GET /api/models/{org}/{name}/tree/{revision}``: ``list_repo_tree``, which ``snapshot_download`` reads;
* ``HEAD`` and ``GET /{org}/{name}/resolve/{revision}/{path}``: a file's metadata and bytes;
* ``POST /api/validate-yaml``, ``/api/models/{org}/{name}/preupload/{revision}`` and ``.../commit/{revision}``
  (``create_pr=1``):
  ``create_commit``'s two calls; a pull request is kept in :attr:`HubStandIn.pull_requests`, never merged.

Its repositories are public, gated (a granted token reads them), private, pickle-only, or failing (503s
for a number of requests). An unknown token is refused as the Hub refuses one, with 401 and
``Invalid credentials in Authorization header``; an unknown repository is 401 ``RepoNotFound``, an
unknown revision 404 ``RevisionNotFound``, a gated file without access 401/403 ``GatedRepo``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import yaml


@dataclass
class HubRepository:
    files: dict[str, bytes]
    gated: bool = False
    private: bool = False
    granted: set[str] = field(default_factory=set)  # tokens that may read it (gated or private)
    card: dict = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)  # tag or branch -> commit, besides main
    failing: int = 0  # answer 503 to this many more requests

    @property
    def commit(self) -> str:
        digest = hashlib.sha1()
        for path in sorted(self.files):
            digest.update(path.encode() + b"\0" + hashlib.sha1(self.files[path]).digest())
        return digest.hexdigest()

    def resolve(self, revision: str) -> str | None:
        if revision in ("main", self.commit):
            return self.commit
        return self.tags.get(revision)


class HubStandIn(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.repositories: dict[str, HubRepository] = {}
        self.tokens: set[str] = set()  # every token the Hub knows (valid credentials)
        self.requests: list[tuple[str, str, bool]] = []  # (method, path, whether a token came with it)
        self.pull_requests: list[dict] = []  # {"repository", "token", "summary", "description", "files": {path: bytes}}
        self.writers: dict[str, set[str]] = {}  # repository -> tokens that may open pull requests on it
        self.lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def add(self, repository: str, repo: HubRepository) -> HubRepository:
        self.repositories[repository] = repo
        return repo

    def add_checkpoint(self, repository: str, folder: Path, **options) -> HubRepository:
        """A repository holding every file of the checkpoint ``folder`` (and any extra ``files``)."""
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        files.update(options.pop("files", {}))
        return self.add(repository, HubRepository(files=files, **options))

    def start(self) -> HubStandIn:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port: nothing of it outlives the test."""
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: HubStandIn

    def log_message(self, *_: object) -> None:
        return None

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        parts = unquote(url.path).strip("/").split("/")
        token = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.requests.append(("POST", url.path, bool(token)))
        if token and token not in self.server.tokens:
            return self._error(401, "", "Invalid credentials in Authorization header", False)
        if parts == ["api", "validate-yaml"]:  # create_commit checks a README's metadata first
            return self._validated(json.loads(body).get("content", ""))
        if parts[:2] != ["api", "models"] or len(parts) < 6 or parts[4] not in ("preupload", "commit"):
            return self._error(404, "", "no such route on this Hub stand-in", False)
        name = "/".join(parts[2:4])
        repo = self._repository(name, token, False)
        if repo is None:
            return None
        if token not in self.server.writers.get(name, set()):
            return self._error(403, "", "You don't have the rights to create a pull request on this repository", False)
        if parts[4] == "preupload":
            paths = [file["path"] for file in json.loads(body)["files"]]
            return self._json({"files": [{"path": p, "uploadMode": "regular", "shouldIgnore": False} for p in paths],
                               "commitOid": repo.commit}, False)  # fmt: skip
        if parse_qs(url.query).get("create_pr") != ["1"]:
            return self._error(403, "", "this stand-in takes pull requests only", False)
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        files = {line["value"]["path"]: base64.b64decode(line["value"]["content"]) for line in lines
                 if line["key"] == "file"}  # fmt: skip
        self.server.pull_requests.append({"repository": name, "summary": header.get("summary", ""),
                                          "description": header.get("description", ""), "files": files})  # fmt: skip
        number = len(self.server.pull_requests)
        return self._json({"commitUrl": f"{self.server.endpoint}/{name}/commit/{'0' * 40}",
                           "commitOid": "0" * 40,
                           "pullRequestUrl": f"{self.server.endpoint}/{name}/discussions/{number}"}, False)  # fmt: skip

    def _answer(self, head: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        token = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        with self.server.lock:
            self.server.requests.append((self.command, path, bool(token)))
        if token and token not in self.server.tokens:
            return self._error(401, "", "Invalid credentials in Authorization header", head)
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] in ("revision", "tree"):
            repository, route, revision = "/".join(parts[2:4]), parts[4], "/".join(parts[5:])
            return self._api(repository, route, revision, token, head)
        if len(parts) >= 5 and parts[2] == "resolve":
            return self._file("/".join(parts[:2]), parts[3], "/".join(parts[4:]), token, head)
        return self._error(404, "", "no such route on this Hub stand-in", head)

    def _repository(self, name: str, token: str, head: bool) -> HubRepository | None:
        repo = self.server.repositories.get(name)
        if repo is None or (repo.private and token not in repo.granted):
            self._error(401, "RepoNotFound", "Repository not found", head)
            return None
        if repo.failing > 0:
            repo.failing -= 1
            self._error(503, "", "Service Unavailable", head)
            return None
        return repo

    def _api(self, name: str, route: str, revision: str, token: str, head: bool) -> None:
        repo = self._repository(name, token, head)
        if repo is None:
            return
        commit = repo.resolve(revision)
        if commit is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", head)
        if route == "tree":
            entries = [{"type": "file", "oid": hashlib.sha1(data).hexdigest(), "size": len(data), "path": path}
                       for path, data in sorted(repo.files.items())]  # fmt: skip
            return self._json(entries, head)
        siblings = [{"rfilename": path, "size": len(data), "blobId": hashlib.sha1(data).hexdigest()}
                    for path, data in sorted(repo.files.items())]  # fmt: skip
        info = {"id": name, "modelId": name, "sha": commit, "private": repo.private,
                "gated": "manual" if repo.gated else False, "siblings": siblings, "cardData": repo.card,
                "tags": [], "downloads": 0, "likes": 0}  # fmt: skip
        return self._json(info, head)

    def _file(self, name: str, revision: str, path: str, token: str, head: bool) -> None:
        repo = self._repository(name, token, head)
        if repo is None:
            return
        if repo.gated and token not in repo.granted:
            status = 403 if token else 401
            return self._error(status, "GatedRepo", f"Access to model {name} is restricted", head)
        commit = repo.resolve(revision)
        if commit is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", head)
        data = repo.files.get(path)
        if data is None:
            return self._error(404, "EntryNotFound", f"{path} does not exist", head)
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
        self.send_header("X-Repo-Commit", commit)
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def _validated(self, readme: str) -> None:
        header = readme.split("---", 2)[1] if readme.startswith("---") else ""
        try:
            yaml.safe_load(header)
        except yaml.YAMLError as exc:
            return self._json_status(400, {"errors": [{"message": f"invalid YAML: {exc}"}], "warnings": []})
        return self._json({"errors": [], "warnings": []}, False)

    def _json_status(self, status: int, value: object) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, value: object, head: bool) -> None:
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str, head: bool) -> None:
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        if code:
            self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)
