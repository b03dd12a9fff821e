"""The S3 artefact store: django-storages' ``S3Storage``, with URLs other hosts can use and uploads that skip the web.

Two things the plain backend does not do, and a platform spread over several hosts needs:

* **URLs signed for the address other hosts use.** A pre-signed URL's signature covers its host, so a
  URL signed for ``http://minio:9000`` (a name only the compose network resolves) cannot be fetched
  from a GPU host elsewhere, nor rewritten after signing. ``public_endpoint_url``
  (``BIOLM_S3_PUBLIC_ENDPOINT_URL``) is the address URLs are signed for; the platform itself still
  talks to ``endpoint_url``.
* **Pre-signed uploads, checked by the server.** A worker's output goes straight to the bucket: one
  pre-signed ``PUT``, or a multipart upload whose parts are pre-signed one by one. Each URL is signed
  with the SHA-256 the worker declared for that body (``x-amz-checksum-sha256``), so the server itself
  refuses a body that differs (``BadDigest``), and a dropped part is sent again alone.
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass

from botocore.exceptions import ClientError
from storages.backends.s3 import S3Storage
from storages.utils import clean_name


def b64_digest(hex_digest: str) -> str:
    """A hex SHA-256 as S3's checksum headers carry it (base64 of the 32 bytes)."""
    return base64.b64encode(bytes.fromhex(hex_digest)).decode()


@dataclass(frozen=True)
class StoredObject:
    size: int
    sha256_b64: str | None  # the checksum the server verified on a single PUT; None after a multipart upload


class ArtefactS3Storage(S3Storage):
    """``S3Storage`` that signs for ``public_endpoint_url`` and hands out checked upload URLs."""

    def __init__(self, **settings) -> None:
        super().__init__(**settings)
        self._signers = threading.local()

    def get_default_settings(self) -> dict:
        return {**super().get_default_settings(), "public_endpoint_url": None}

    def key(self, name: str) -> str:
        """The object key of artefact ``name`` (under the storage's ``location``, if it has one)."""
        return self._normalize_name(clean_name(name))

    @property
    def signer(self):
        """A client bound to the public address: what it signs, other hosts can fetch."""
        client = getattr(self._signers, "client", None)
        if client is None:
            session = self._create_session()
            client = self._signers.client = session.client(
                "s3", region_name=self.region_name, use_ssl=self.use_ssl,
                endpoint_url=self.public_endpoint_url or self.endpoint_url, config=self.client_config,
                verify=self.verify,
            )  # fmt: skip
        return client

    @property
    def client(self):
        """The platform's own client, at ``endpoint_url``."""
        return self.connection.meta.client

    def url(self, name: str, parameters=None, expire: int | None = None, http_method: str | None = None) -> str:
        params = {**(parameters or {}), "Bucket": self.bucket_name, "Key": self.key(name)}
        return self.signer.generate_presigned_url(
            "get_object", Params=params, ExpiresIn=expire or self.querystring_expire, HttpMethod=http_method
        )

    def presigned_put(self, name: str, sha256_hex: str, expire: int | None = None) -> dict:
        """A single ``PUT`` of ``name`` whose body the server accepts only with this SHA-256."""
        checksum = b64_digest(sha256_hex)
        url = self.signer.generate_presigned_url(
            "put_object", ExpiresIn=expire or self.querystring_expire,
            Params={"Bucket": self.bucket_name, "Key": self.key(name), "ChecksumSHA256": checksum},
        )  # fmt: skip
        return {"url": url, "headers": {"x-amz-checksum-sha256": checksum}}

    def start_multipart(self, name: str) -> str:
        answer = self.client.create_multipart_upload(
            Bucket=self.bucket_name, Key=self.key(name), ChecksumAlgorithm="SHA256"
        )
        return answer["UploadId"]

    def presigned_part(self, name: str, upload_id: str, number: int, sha256_hex: str, expire: int | None = None
                       ) -> dict:  # fmt: skip
        checksum = b64_digest(sha256_hex)
        url = self.signer.generate_presigned_url(
            "upload_part", ExpiresIn=expire or self.querystring_expire,
            Params={"Bucket": self.bucket_name, "Key": self.key(name), "UploadId": upload_id, "PartNumber": number,
                    "ChecksumSHA256": checksum},
        )  # fmt: skip
        return {"number": number, "url": url, "headers": {"x-amz-checksum-sha256": checksum}}

    def uploaded_parts(self, name: str, upload_id: str) -> list[dict]:
        """The parts the server holds for the upload, each with its number, size and ETag."""
        parts, marker = [], 0
        while True:
            answer = self.client.list_parts(
                Bucket=self.bucket_name, Key=self.key(name), UploadId=upload_id, PartNumberMarker=marker
            )
            parts += answer.get("Parts", [])
            if not answer.get("IsTruncated"):
                return parts
            marker = answer["NextPartNumberMarker"]

    def finish_multipart(self, name: str, upload_id: str, parts: list[dict], sha256_hex: list[str]) -> None:
        """Complete the upload from its ``parts`` (as listed) and the SHA-256 each was signed with."""
        listing = [
            {"PartNumber": part["PartNumber"], "ETag": part["ETag"], "ChecksumSHA256": b64_digest(digest)}
            for part, digest in zip(parts, sha256_hex, strict=True)
        ]
        self.client.complete_multipart_upload(
            Bucket=self.bucket_name, Key=self.key(name), UploadId=upload_id, MultipartUpload={"Parts": listing}
        )

    def abort_multipart(self, name: str, upload_id: str) -> None:
        self.client.abort_multipart_upload(Bucket=self.bucket_name, Key=self.key(name), UploadId=upload_id)

    def stored(self, name: str) -> StoredObject | None:
        """What the server holds under ``name`` (its size and verified checksum), or None."""
        try:
            head = self.client.head_object(Bucket=self.bucket_name, Key=self.key(name), ChecksumMode="ENABLED")
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        checksum = head.get("ChecksumSHA256")
        return StoredObject(head["ContentLength"], checksum if checksum and "-" not in checksum else None)
