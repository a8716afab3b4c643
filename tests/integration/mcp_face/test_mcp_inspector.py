"""The MCP Inspector CLI 2.x (the reference client, under Node 22) drives `tickloop mcp serve` over
stdio and streamable HTTP: nobody here wrote the client, so it checks our reading of the protocol."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from mcp_support import Operator
from test_mcp_http import serving
from tests.peers import INSPECTOR_CLI, NODE, require

from tickloop.mcp.extras import PROMPTS, TEMPLATES
from tickloop.mcp.face import RESOURCES, TOOLS

#: one valid call of every tool (explain_intent's id is filled in once an intent exists)
CALLS: dict[str, dict[str, Any]] = {
    "add_task": {"title": "from the inspector", "priority": 3},
    "set_task_status": {"task_id": 1, "action": "block"},
    "stage_intent": {"type": "note", "title": "inspected", "payload": {"body": "hi"}},
    "explain_intent": {"intent_id": 0},
    "search_memory": {"query": "printer"},
    "add_memory_note": {"text": "the printer is on floor 3"},
    "progress": {"limit": 5},
    "draft_goal": {"title": "Ship v2"},
}


def run_inspector(target: list[str], *args: str, env: dict[str, str]) -> Any:
    """One Inspector CLI call (``--format json``); its result object, or the failure named."""
    # the CLI runs only when argv[1] is its real path (tests/npm/node_modules is a symlink)
    cli = str(require(INSPECTOR_CLI).resolve())
    done = subprocess.run(
        [str(require(NODE)), cli, "--format", "json", "--quiet", *args, *target],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env=env,
    )
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout)["result"]


def private_home(op: Operator) -> dict[str, str]:
    """The operator's environment with HOME in the test's directory (the Inspector keeps state there)."""
    return {**op.env, "HOME": str(op.tmp_path / "home")}


def stdio_target(op: Operator) -> list[str]:
    env = [f"{k}={v}" for k, v in op.env.items() if k.startswith(("TICKLOOP_", "XDG_"))]
    flags = [part for pair in env for part in ("-e", pair)]
    return [*flags, "--", sys.executable, "-m", "tickloop", "mcp", "serve", "--profile", "me"]


def drive(target: list[str], env: dict[str, str]) -> dict[str, Any]:
    """List everything, read every resource, call every tool; what came back, by what was asked."""

    def inspector(*args: str) -> Any:
        return run_inspector(target, *args, env=env)

    seen: dict[str, Any] = {"tools": inspector("--method", "tools/list")["tools"]}
    seen["resources"] = inspector("--method", "resources/list")["resources"]
    seen["templates"] = inspector("--method", "resources/templates/list")["resourceTemplates"]
    seen["prompts"] = inspector("--method", "prompts/list")["prompts"]
    for resource in seen["resources"]:
        seen[resource["uri"]] = inspector("--method", "resources/read", "--uri", resource["uri"])
    for name, given in CALLS.items():
        arguments = given
        if name == "explain_intent":
            arguments = {"intent_id": seen["stage_intent"]["structuredContent"]["intent"]["id"]}
        args = ["--method", "tools/call", "--tool-name", name, "--tool-args-json", json.dumps(arguments)]
        seen[name] = inspector(*args)
    seen["plan"] = inspector("--method", "prompts/get", "--prompt-name", "plan-next-step")
    return seen


def check(seen: dict[str, Any], op: Operator, origin: str) -> None:
    assert {t["name"] for t in seen["tools"]} == set(TOOLS)
    assert all(t["inputSchema"]["additionalProperties"] is False for t in seen["tools"])
    uris = {r["uri"] for r in seen["resources"]}
    assert uris == {f"tickloop://{n}" for n in RESOURCES} | {f"tickloop://{n}.txt" for n in RESOURCES}
    assert {t["uriTemplate"] for t in seen["templates"]} == set(TEMPLATES)
    assert {p["name"] for p in seen["prompts"]} == set(PROMPTS)
    assert all(seen[uri]["contents"][0]["text"] for uri in uris)
    for name in CALLS:
        assert seen[name]["isError"] is False, (name, seen[name])
    staged = seen["stage_intent"]["structuredContent"]["intent"]
    assert (staged["status"], staged["origin"]["tick_kind"]) == ("requires_approval", origin)
    assert "Ship v1" in seen["plan"]["messages"][0]["content"]["text"]
    titles = {t["title"] for t in op.json("operator", "board", "--profile", "me")["tasks"]}
    assert "from the inspector" in titles


@pytest.mark.timeout(900)
def test_the_inspector_drives_every_tool_and_resource_over_stdio(sqlite_op: Operator) -> None:
    """Over stdio, the Inspector lists tools, resources, templates and prompts, reads every resource
    and calls every tool successfully; its writes land in the store."""
    check(drive(stdio_target(sqlite_op), private_home(sqlite_op)), sqlite_op, "mcp")


@pytest.mark.timeout(600)
def test_the_inspector_drives_every_tool_and_resource_over_http(sqlite_op: Operator) -> None:
    """Over streamable HTTP with a named agent token, the same; the staged intent records the agent,
    and the Inspector without the token is refused."""
    token = sqlite_op.cli("mcp", "token", "--name", "inspector").stdout.strip()
    with serving(sqlite_op) as url:
        target = ["--transport", "http", "--server-url", url, "--header", f"Authorization: Bearer {token}"]
        seen = drive(target, private_home(sqlite_op))
        refused = subprocess.run(
            [str(NODE), str(INSPECTOR_CLI.resolve()), "--format", "json", "--method", "tools/list",
             "--transport", "http", "--server-url", url, "--stored-auth-only"],
            capture_output=True, text=True, timeout=90, check=False, env=private_home(sqlite_op),
        )  # fmt: skip
    assert refused.returncode != 0
    assert "auth_required" in refused.stdout + refused.stderr  # the Inspector's word for our 401
    check(seen, sqlite_op, "mcp:inspector")
