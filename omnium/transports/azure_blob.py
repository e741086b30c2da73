"""Push to Azure Blob Storage: one block blob per file, through Microsoft's azure-storage-blob.

A blob is replaced whole: up to the single-upload size it is one Put Blob, above it blocks
are staged and then committed in one Put Block List; either way a reader gets the old blob or
the new one, never part of one. The bytes are checked by the service (Content-MD5 on each
request), and the version and ETag go with the blob as metadata.
"""

from __future__ import annotations

import base64

from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.storage.blob import BlobServiceClient, ContentSettings

from . import object_headers
from .base import TIMEOUT_SETTINGS, Deadline, FeedFile, Receipt, Setting, Transport, TransportError, join_remote
from .failures import Reason, reason_of_os_error
from .probes import ProbeSteps, probe_file_name
from .urls import userinfo_problem

# The service's codes for a key or SAS it does not accept (Azure says AuthenticationFailed,
# Azurite AuthorizationFailure); other Authorization* codes are a sign-in without write rights.
REFUSED_CREDENTIALS = {"AuthenticationFailed", "AuthorizationFailure", "InvalidAuthenticationInfo"}


def _account_url_problem(url: str) -> str | None:
    if not url.startswith(("https://", "http://")):
        return "must start with https:// (e.g. https://<account>.blob.core.windows.net)"
    if "?" in url:
        return "must not hold a SAS token (?sv=…): put it in the credentials"
    return userinfo_problem(url)


def _account_key_problem(key: str) -> str | None:
    try:
        base64.b64decode(key, validate=True)
    except ValueError:
        return "must be the storage account key as the portal shows it (base64)"
    return None


class AzureBlobTransport(Transport):
    kind = "azure_blob"
    label = "Azure Blob Storage"
    config_schema = {
        **TIMEOUT_SETTINGS,
        "account_url": Setting(str, required=True, check=_account_url_problem,
                               help="https://<account>.blob.core.windows.net (or the client's own endpoint)."),
        "container": Setting(str, required=True, help="The container the blobs go in; it must exist."),
        "prefix": Setting(str, default="", help="Folder-like prefix of every blob name (no leading '/')."),
        **object_headers.SETTINGS,
    }
    credentials_bound_to = ("account_url", "container")
    credentials_schema = {
        "account_name": Setting(str, help="With an account key: the storage account's name."),
        "account_key": Setting(str, check=_account_key_problem, help="The storage account key (or use a SAS token)."),
        "sas_token": Setting(str, help="A SAS token allowing create and write on the container (without '?')."),
    }
    address_setting = "account_url"

    @classmethod
    def validate_credentials(cls, credentials: dict) -> list[str]:
        problems = super().validate_credentials(credentials)
        has_key, has_sas = bool(credentials.get("account_key")), bool(credentials.get("sas_token"))
        if has_key == has_sas:
            problems.append("give either an account key (with the account name) or a SAS token")
        elif has_key and not credentials.get("account_name"):
            problems.append("account_name is required with an account key")
        return problems

    def __init__(self, config: dict, credentials: dict):
        super().__init__(config, credentials)
        service = BlobServiceClient(
            self.config["account_url"], credential=self._credential(),
            retry_total=0,  # a retry is the sender's to schedule; the SDK's would eat the deadline
            connection_timeout=self.config["connect_timeout"], read_timeout=self.config["send_timeout"])
        self._container = service.get_container_client(self.config["container"])
        self._headers = object_headers.ObjectHeaders(self.config)

    def _credential(self):
        if self.credentials.get("sas_token"):
            return AzureSasCredential(self.credentials["sas_token"].lstrip("?"))
        return AzureNamedKeyCredential(self.credentials["account_name"], self.credentials["account_key"])

    def push(self, file: FeedFile, deadline: Deadline) -> Receipt:
        name = join_remote(self.config["prefix"].strip("/"), file.path)
        settings = ContentSettings(content_type=self._headers.content_type(file.path, file.content_type),
                                   cache_control=self._headers.cache_control(file.path))
        deadline.before_commit("azure blob")  # Put Blob, or the Put Block List that commits the blocks
        try:
            reply = self._container.get_blob_client(name).upload_blob(
                file.body, overwrite=True, validate_content=True, content_settings=settings,
                metadata={"omnium_version": str(file.version), "omnium_etag": file.etag},
                timeout=max(1, int(deadline.remaining())))
        except Exception as exc:
            raise self._failure(exc) from exc
        return Receipt(f"etag={reply['etag'].strip(chr(34))} blob={name} size={len(file.body)}")

    def probe(self, steps: ProbeSteps, deadline: Deadline) -> None:
        name = join_remote(self.config["prefix"].strip("/"), probe_file_name())
        with steps.step(f"write a test blob {name} in container {self.config['container']!r}", failure=self._failure):
            self._container.upload_blob(name, b"omnium connection test", overwrite=True)
        with steps.step("remove the test blob", failure=self._failure):
            self._container.delete_blob(name)

    def _failure(self, exc: BaseException) -> TransportError:
        if isinstance(exc, TransportError):
            return exc
        code = str(getattr(getattr(exc, "error_code", None), "value", None) or "")
        if isinstance(exc, ClientAuthenticationError) or code in REFUSED_CREDENTIALS:
            return TransportError(f"azure blob: refused our credentials: {code or exc}", permanent=True,
                                  reason=Reason.AUTH_REFUSED)
        status = getattr(exc, "status_code", None)
        if code.startswith("Authorization") or status == 403:  # signed in; the role or SAS does not allow writing
            return TransportError(f"azure blob: not allowed to write: {code or exc.reason}", permanent=True,
                                  reason=Reason.PERMISSION_DENIED)
        if isinstance(exc, ResourceNotFoundError):
            return TransportError(f"azure blob: {code or 'not found'}: container {self.config['container']!r}",
                                  permanent=True, reason=Reason.MISSING_TARGET)
        if isinstance(exc, ServiceRequestError | ServiceResponseError):
            connected = isinstance(exc, ServiceResponseError)
            cause = exc.inner_exception or exc  # the HTTP library's error, with the socket's below it
            return TransportError(f"azure blob: {exc}", reason=reason_of_os_error(cause, connected=connected),
                                  seconds=self.config["send_timeout" if connected else "connect_timeout"])
        if isinstance(exc, HttpResponseError):
            status = status or 0
            permanent = 400 <= status < 500 and status not in (408, 409, 429)
            return TransportError(f"azure blob: HTTP {status} {code}", permanent=permanent, status=status,
                                  reason=Reason.HTTP_STATUS)
        return TransportError(f"azure blob: {type(exc).__name__}: {exc}",
                              reason=reason_of_os_error(exc, connected=True))

    def close(self) -> None:
        self._container.close()
