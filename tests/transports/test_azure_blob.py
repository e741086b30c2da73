"""The Azure Blob destination against Azurite (Microsoft's emulator): SAS tokens or an account
key, what the blob carries, and refusals in plain words."""

from __future__ import annotations

import hashlib
import os
import threading
from datetime import UTC, datetime, timedelta

import pytest
from azure.storage.blob import ContainerSasPermissions, generate_container_sas

from omnium.transports import TransportError
from omnium.transports.failures import Reason

from .kits import feed_path

pytestmark = pytest.mark.servers


def _sas(server, **permissions) -> str:
    return generate_container_sas(server.account_name, server.container, account_key=server.account_key,
                                  permission=ContainerSasPermissions(**permissions),
                                  expiry=datetime.now(UTC) + timedelta(hours=1))


def test_a_sas_token_that_may_write_delivers_the_blob_with_its_type_cache_and_version(azure_blob_kit, azurite):
    transport = azure_blob_kit.transport(cache_control="max-age=10",
                                         credentials={"sas_token": "?" + _sas(azurite, create=True, write=True)})
    path = feed_path()

    transport.send(b'{"medals": []}', path, content_type="application/json", version=42, etag="e42")

    blob = azure_blob_kit.reader.get_blob_client(f"{azure_blob_kit.prefix}/{path}").get_blob_properties()
    assert azure_blob_kit.read_back(path) == b'{"medals": []}'
    assert blob.content_settings.content_type == "application/json"
    assert blob.content_settings.cache_control == "max-age=10"
    assert blob.metadata == {"omnium_version": "42", "omnium_etag": "e42"}
    assert blob.blob_type == "BlockBlob"


def test_a_sas_token_that_may_only_read_is_told_it_may_not_write(azure_blob_kit, azurite):
    transport = azure_blob_kit.transport(credentials={"sas_token": _sas(azurite, read=True, list=True)})
    path = feed_path()

    with pytest.raises(TransportError) as failure:
        azure_blob_kit.send(transport, b"{}", path)

    assert failure.value.permanent and failure.value.reason == Reason.PERMISSION_DENIED, str(failure.value)
    assert azure_blob_kit.read_back(path) is None


def test_a_missing_container_is_permanent_and_named(azure_blob_kit):
    transport = azure_blob_kit.transport(container="no-such-container")

    with pytest.raises(TransportError, match="no-such-container") as failure:
        azure_blob_kit.send(transport, b"{}", feed_path())

    assert failure.value.permanent and failure.value.reason == Reason.MISSING_TARGET


@pytest.mark.parametrize("config, credentials, refusal", [
    ({}, {"account_name": "a"}, "either an account key"),
    ({}, {"account_name": "a", "account_key": "a2V5", "sas_token": "sv=x"}, "either an account key"),
    ({}, {"account_key": "a2V5"}, "account_name is required"),
    ({}, {"account_name": "a", "account_key": "not base64!"}, "account key as the portal shows it"),
    ({"account_url": "https://acct.blob.core.windows.net?sv=2024"}, None, "must not hold a SAS token"),
    ({"account_url": "ftp://acct.blob.core.windows.net"}, None, "must start with https://"),
])
def test_settings_that_cannot_work_are_refused_plainly(azure_blob_kit, config, credentials, refusal):
    with pytest.raises(TransportError, match=refusal) as refused:
        azure_blob_kit.transport(**config, credentials=credentials if credentials is not None else None)

    assert refused.value.permanent


def test_a_blob_above_the_single_upload_size_is_committed_whole(azure_blob_kit):
    """Above 64 MB the SDK stages blocks and commits them in one Put Block List: a reader
    meanwhile finds nothing, then the whole blob."""
    body, path, seen, done = os.urandom(70 * 1024 * 1024), feed_path(), set(), threading.Event()

    def read_while_sending():
        while not done.is_set():
            held = azure_blob_kit.read_back(path)
            seen.add(None if held is None else hashlib.sha256(held).hexdigest())

    reader = threading.Thread(target=read_while_sending)
    reader.start()
    try:
        receipt = azure_blob_kit.send(azure_blob_kit.transport(send_timeout=120), body, path)
    finally:
        done.set()
        reader.join()

    assert seen <= {None, hashlib.sha256(body).hexdigest()}, "a reader saw part of the blob"
    assert azure_blob_kit.read_back(path) == body and "size=73400320" in receipt.text
    committed, _ = azure_blob_kit.reader.get_blob_client(f"{azure_blob_kit.prefix}/{path}").get_block_list()
    assert len(committed) > 1, "sent as blocks, committed in one list"


def test_each_file_format_gets_its_own_content_type_and_cache_control(azure_blob_kit):
    transport = azure_blob_kit.transport(cache_control_by_format="xml: max-age=60",
                                         content_type_by_format=".XML: text/xml")
    xml, json_path = feed_path("calendar.xml"), feed_path("calendar.json")
    transport.send(b"<c/>", xml, content_type="application/xml", version=1, etag="e1")
    transport.send(b"{}", json_path, content_type="application/json", version=1, etag="e1")

    def settings_of(path):
        blob = azure_blob_kit.reader.get_blob_client(f"{azure_blob_kit.prefix}/{path}")
        content = blob.get_blob_properties().content_settings
        return content.content_type, content.cache_control

    assert settings_of(xml) == ("text/xml", "max-age=60")
    assert settings_of(json_path) == ("application/json", None)
