"""/mcp on the serve app (compiler/serve/mcp.py's app over this server's sessions): the
MCP SDK's own client calls tools in an episode the trainer opened, by its handle in `_meta`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from compiler.serve.catalog import Catalog
from compiler.serve.mcp import EPISODE_META_KEY

from .conftest import ServerFactory
from .test_faults import faulty_catalog


async def mcp_calls(url: str, episode: str) -> dict[str, Any]:
    async with Client(f"{url}/mcp/") as client:
        listed = await client.list_tools()
        found = await client.call_tool("ticketing__get_ticket", {"ticket_id": 2}, meta={EPISODE_META_KEY: episode})
        refused = await client.call_tool("ticketing__get_ticket", {"ticket_id": "x"}, meta={EPISODE_META_KEY: episode})
        with pytest.raises(MCPError, match="unknown episode 'no-such-episode'"):
            await client.call_tool("ticketing__whoami", {}, meta={EPISODE_META_KEY: "no-such-episode"})
        return {"tools": listed.tools, "found": found, "refused": refused}


def test_mcp_tools_call_reaches_the_servers_sessions(serve: ServerFactory) -> None:
    live = serve(mcp=True)
    with live.client() as client:
        _, handle = live.open_session(client, env="ticketing", scenario="help_desk_monday", episode_id="m1")
        answers = asyncio.run(mcp_calls(live.url, handle))
        names = {tool.name for tool in answers["tools"]}
        assert "ticketing__get_ticket" in names and "support_triage__get_transcript" in names
        assert answers["found"].is_error is False
        assert answers["found"].structured_content["result"]["id"] == 2
        assert answers["refused"].is_error is True
        assert answers["refused"].structured_content["error"]["kind"] == "invalid_argument"
        assert client.get("/sessions/m1").json()["turns"] == 2, "MCP calls count as the episode's turns"


async def failing_call(url: str, episode: str) -> MCPError:
    async with Client(f"{url}/mcp/") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("ticketing__logout", {}, meta={EPISODE_META_KEY: episode})
        return caught.value


def test_an_infrastructure_failure_is_a_protocol_error_not_a_result(serve: ServerFactory, catalog: Catalog) -> None:
    live = serve(mcp=True, use=faulty_catalog(catalog))
    with live.client() as client:
        _, handle = live.open_session(client, env="ticketing", episode_id="m2")
        for _ in range(2):  # the failing call, then the broken session
            error = asyncio.run(failing_call(live.url, handle)).error
            assert error.code == -32603 and "logout" in error.message
        assert client.post("/sessions/m2/score").json()["scorable"] is False
