"""Workspaces through the official SDK (spec §27.1): all twelve methods of ``workspaces`` against a real server, on
SQLite and on PostgreSQL, with the limits, bad paths and signed links a user can run into."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import cast
from urllib.parse import urlsplit

import httpx
import pytest
from browser_use_sdk import BrowserUseError
from browser_use_sdk.generated.v3.models import FileUploadItem, Size
from browser_use_sdk.v3 import AsyncBrowserUse

from tests.e2e.servers import server_fixture
from tests.support.server import ServerProcess

pytestmark = pytest.mark.e2e

server = server_fixture({"WORKSPACE_MAX_MB": "1", "API_KEY": "local-key"}, both_stores=True)
MIB = 1024 * 1024


@pytest.fixture
def client(server: ServerProcess, sdk: Callable[[ServerProcess], AsyncBrowserUse]) -> AsyncBrowserUse:
    return sdk(server)


def workspace_dir(server: ServerProcess, workspace_id: str) -> Path:
    return server.home / "data" / "workspaces" / workspace_id


async def test_workspace_rows_round_trip(client: AsyncBrowserUse) -> None:
    created = await client.workspaces.create(name="people")
    assert created.name == "people"
    assert (await client.workspaces.get(created.id)).id == created.id
    renamed = await client.workspaces.update(created.id, name="people v2")
    assert renamed.name == "people v2" and renamed.updated_at >= created.updated_at
    other = await client.workspaces.create()
    page = await client.workspaces.list(page_size=1, page_number=1)
    assert page.page_size == 1 and page.total_items >= 2 and page.items[0].id == other.id  # newest first
    await client.workspaces.delete(other.id)
    with pytest.raises(BrowserUseError) as missing:
        await client.workspaces.get(other.id)
    assert missing.value.status_code == 404
    with pytest.raises(BrowserUseError) as bogus:
        await client.workspaces.get("not-a-uuid")
    assert bogus.value.status_code == 404


async def test_upload_list_download_and_delete_files(
    client: AsyncBrowserUse, server: ServerProcess, tmp_path: Path
) -> None:
    workspace = await client.workspaces.create(name="files")
    people = tmp_path / "people.csv"
    people.write_text("name,city\nAda,London\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    assert await client.workspaces.upload(workspace.id, people, notes) == ["uploads/people.csv", "uploads/notes.txt"]
    assert await client.workspaces.upload(workspace.id, notes, prefix="out/deep") == ["out/deep/notes.txt"]

    listed = await client.workspaces.files(workspace.id)
    assert [(f.path, f.size) for f in listed.files] == [
        ("out/deep/notes.txt", 5),
        ("uploads/notes.txt", 5),
        ("uploads/people.csv", people.stat().st_size),
    ]
    assert all(f.url is None for f in listed.files)
    shallow = await client.workspaces.files(workspace.id, prefix="out", shallow=True)
    assert shallow.files == [] and shallow.folders == ["deep"]
    first = await client.workspaces.files(workspace.id, prefix="uploads/", limit=1)
    assert [f.path for f in first.files] == ["uploads/notes.txt"] and first.has_more
    second = await client.workspaces.files(workspace.id, prefix="uploads/", limit=1, cursor=first.next_cursor)
    assert [f.path for f in second.files] == ["uploads/people.csv"] and not second.has_more

    local = await client.workspaces.download(workspace.id, "uploads/people.csv", to=tmp_path / "back.csv")
    assert local.read_text() == people.read_text()
    everything = cast("list[Path]", await client.workspaces.download_all(workspace.id, to=tmp_path / "all"))
    assert sorted(p.relative_to(tmp_path / "all").as_posix() for p in everything) == [
        "out/deep/notes.txt",
        "uploads/notes.txt",
        "uploads/people.csv",
    ]

    size = await client.workspaces.size(workspace.id)
    assert size == {"usedBytes": people.stat().st_size + 10, "fileCount": 3, "limitBytes": MIB}
    await client.workspaces.delete_file(workspace.id, path="uploads/notes.txt")
    assert [f.path for f in (await client.workspaces.files(workspace.id, prefix="uploads")).files] == [
        "uploads/people.csv"
    ]
    with pytest.raises(BrowserUseError) as gone:
        await client.workspaces.delete_file(workspace.id, path="uploads/notes.txt")
    assert gone.value.status_code == 404

    await client.workspaces.delete(workspace.id)
    assert not workspace_dir(server, str(workspace.id)).exists()


async def test_limits_answer_413_and_keep_nothing(client: AsyncBrowserUse, server: ServerProcess) -> None:
    workspace = await client.workspaces.create()
    huge = FileUploadItem(name="big.bin", contentType="application/octet-stream", size=Size(101 * MIB))
    with pytest.raises(BrowserUseError) as too_big:
        await client.workspaces.upload_files(workspace.id, [huge])
    assert too_big.value.status_code == 413 and "100 MiB" in str(too_big.value.detail)
    over = FileUploadItem(name="over.bin", size=Size(MIB + 1))
    with pytest.raises(BrowserUseError) as full:
        await client.workspaces.upload_files(workspace.id, [over])
    assert full.value.status_code == 413 and "1 MiB" in str(full.value.detail)

    # a PUT that sends more than it declared is refused, and nothing of it is listed or left on disk
    plan = await client.workspaces.upload_files(workspace.id, [FileUploadItem(name="small.txt", size=Size(4))])
    async with httpx.AsyncClient() as http:
        refused = await http.put(plan.files[0].upload_url, content=b"far more than four bytes")
        assert refused.status_code == 413, refused.text
        assert refused.json()["detail"].endswith(".")

        async def chunked() -> object:
            yield b"ab"
            yield b"cdef"  # no Content-Length: caught while streaming

        streamed = await http.put(plan.files[0].upload_url, content=chunked())  # type: ignore[arg-type]
        assert streamed.status_code == 413
        tampered = plan.files[0].upload_url.replace("/upload/4/", "/upload/400/")
        assert (await http.put(tampered, content=b"abcd")).status_code == 403
        assert (await http.put(plan.files[0].upload_url, content=b"abcd")).status_code == 200
    assert [f.path for f in (await client.workspaces.files(workspace.id)).files] == ["uploads/small.txt"]
    leftovers = [p.name for p in workspace_dir(server, str(workspace.id)).rglob("*") if p.name.startswith(".")]
    assert leftovers == []


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "uploads/../../x", "uploads//x", ".hidden", "a/./b"])
async def test_bad_paths_are_400(client: AsyncBrowserUse, http: httpx.Client, path: str) -> None:
    workspace = await client.workspaces.create()
    response = http.delete(f"/v3/workspaces/{workspace.id}/files", params={"path": path})
    assert response.status_code == 400, response.text
    listing = http.get(f"/v3/workspaces/{workspace.id}/files", params={"prefix": path, "shallow": "true"})
    assert listing.status_code == 400
    plan = http.post(
        f"/v3/workspaces/{workspace.id}/files/upload",
        params={"prefix": path},
        json={"files": [{"name": "a", "size": 1}]},
    )
    assert plan.status_code == 400
    bad_name = http.post(f"/v3/workspaces/{workspace.id}/files/upload", json={"files": [{"name": path, "size": 1}]})
    assert bad_name.status_code == 400


async def test_download_links_are_signed_for_one_file(client: AsyncBrowserUse, tmp_path: Path) -> None:
    workspace = await client.workspaces.create()
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    public = tmp_path / "public.txt"
    public.write_text("hello")
    await client.workspaces.upload(workspace.id, secret, public)
    listed = await client.workspaces.files(workspace.id, include_urls=True)
    urls = {f.path: f.url for f in listed.files}
    public_url = urls["uploads/public.txt"]
    assert public_url is not None
    query = urlsplit(public_url).query
    assert "expires=" in query and "sig=" in query
    async with httpx.AsyncClient() as http:
        assert (await http.get(public_url)).text == "hello"
        swapped = public_url.replace("public.txt", "secret.txt")
        assert (await http.get(swapped)).status_code == 403
        unsigned = public_url.split("?")[0]
        assert (await http.get(unsigned)).status_code == 401
        # a download link is no upload link
        assert (await http.put(public_url, content=b"x")).status_code == 405


async def test_unknown_workspace_is_404_everywhere(http: httpx.Client) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    for method, path in [
        ("GET", f"/v3/workspaces/{missing}"),
        ("PATCH", f"/v3/workspaces/{missing}"),
        ("DELETE", f"/v3/workspaces/{missing}"),
        ("GET", f"/v3/workspaces/{missing}/files"),
        ("GET", f"/v3/workspaces/{missing}/size"),
    ]:
        response = http.request(method, path, json={} if method == "PATCH" else None)
        assert response.status_code == 404, (method, path, response.text)
