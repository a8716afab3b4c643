"""`tickloop mcp serve` on stdio, started by the SDK's own client, against a real store."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ResourceTemplateReference, ResourceUpdatedNotification
from mcp_support import Operator, data, error

from tickloop.mcp.face import RESOURCES, TOOLS

SNEAKY = {"status": "approved", "verdict": "allowed", "tier": "reversible", "dry_run": False}
EXPECTED_TOOLS = {
    "add_task",
    "set_task_status",
    "stage_intent",
    "explain_intent",
    "search_memory",
    "add_memory_note",
    "progress",
    "draft_goal",
}
#: words no tool or resource name may carry: the executor, the person's decisions and the settings
FORBIDDEN = (
    "execute", "approve", "deny", "activate", "gate", "tier", "dry", "schedule", "channel",
    "secret", "password", "token", "config", "setting", "claim", "send",
)  # fmt: skip


async def test_every_tool_and_resource_answers(op: Operator) -> None:
    """An agent lists the face, calls every tool and reads every resource; each write lands in the store."""
    async with op.client() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == EXPECTED_TOOLS
        assert all(t.input_schema.get("additionalProperties") is False for t in tools.values())
        action = tools["set_task_status"].input_schema["properties"]["action"]
        assert action["enum"] == ["block", "done", "unblock"]
        task = data(await client.call_tool("add_task", {"title": "from an agent", "priority": 5}))["task"]
        done = data(await client.call_tool("set_task_status", {"task_id": task["id"], "action": "block"}))
        assert done["task"]["status"] == "blocked"
        back = data(await client.call_tool("set_task_status", {"task_id": task["id"], "action": "unblock"}))
        assert back["task"]["status"] == "todo"
        op.cli("operator", "task", "block", str(task["id"]), "--profile", "me")
        op.cli("operator", "task", "unblock", str(task["id"]), "--profile", "me")  # the CLI does the same
        refused = op.cli("operator", "task", "unblock", str(task["id"]), "--profile", "me", ok=False)
        assert "only a blocked task can be unblocked" in refused.stderr
        staged = data(
            await client.call_tool("stage_intent", {"type": "note", "title": "jot", "payload": {"x": 1}})
        )
        assert staged["intent"]["origin"] == {"tick_kind": "mcp", "tainted": True}
        why = data(await client.call_tool("explain_intent", {"intent_id": staged["intent"]["id"]}))
        assert why["ladder"]["tier"] == "reversible"
        # another agent's note waits for the person, though its type is reversible
        assert staged["intent"]["status"] == "requires_approval"
        assert why["deciding_rule"] == "mcp.waits_for_person"
        note = data(await client.call_tool("add_memory_note", {"text": "the printer is on floor 3"}))["note"]
        assert note["tainted"] is True
        found = data(await client.call_tool("search_memory", {"query": "PRINTER floor"}))["notes"]
        assert [n["id"] for n in found] == [note["id"]]
        assert data(await client.call_tool("progress", {"limit": 5})) == {"rows": []}
        draft = data(await client.call_tool("draft_goal", {"title": "Ship v2", "body": "later"}))["goal"]
        assert draft["status"] == "draft"
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        fixed = {f"tickloop://{n}" for n in RESOURCES} | {f"tickloop://{n}.txt" for n in RESOURCES}
        # and the intent waiting for the person
        assert uris == fixed | {f"tickloop://intents/{staged['intent']['id']}"}
        board = json.loads((await client.read_resource("tickloop://board")).contents[0].text)  # type: ignore[union-attr]
        assert board["hash"].startswith("sha256:")
        assert "from an agent" in {t["title"] for t in board["tasks"]}
        goal = json.loads((await client.read_resource("tickloop://goal")).contents[0].text)  # type: ignore[union-attr]
        assert goal["goal"]["title"] == "Ship v1"  # the draft did not become active
        intents = json.loads((await client.read_resource("tickloop://intents")).contents[0].text)  # type: ignore[union-attr]
        assert any(i["id"] == staged["intent"]["id"] for rows in intents["byStatus"].values() for i in rows)
        for name in RESOURCES:
            text = (await client.read_resource(f"tickloop://{name}.txt")).contents[0].text  # type: ignore[union-attr]
            assert text
            assert len(text) < 4000
    assert op.json("operator", "board", "--profile", "me")["hash"] == board["hash"]


def _hostile_calls(other_task: int, other_intent: int) -> list[tuple[str, dict[str, Any], str]]:
    big = "x" * 1_000_000
    deep: Any = "end"
    for _ in range(40):
        deep = [deep]
    return [
        ("add_task", {"title": 7}, "valid string"),
        ("add_task", {"title": "t", "priority": "high"}, "valid integer"),
        ("add_task", {"title": big}, "over the limit"),
        ("add_task", {"title": "   "}, "must not be empty"),
        ("add_task", {"title": "a\x00b"}, "NUL"),
        ("add_task", {"title": "t", "status": "done"}, "unknown argument(s) ['status']"),
        (
            "stage_intent",
            {"type": "note", "title": "t", "tier": "reversible"},
            "unknown argument(s) ['tier']",
        ),
        ("set_task_status", {"task_id": other_task, "action": "done"}, "no task"),
        ("set_task_status", {"task_id": 10**9, "action": "block"}, "no task"),
        ("set_task_status", {"task_id": 1, "action": "approve"}, "is not one of"),
        ("set_task_status", {"task_id": True, "action": "done"}, "valid integer"),
        ("stage_intent", {"type": "email", "title": "t", "payload": [1, 2]}, "valid dictionary"),
        ("stage_intent", {"type": "email", "title": "t", "payload": {"a": deep}}, "nested deeper"),
        ("stage_intent", {"type": "email", "title": "t", "payload": {"body": big}}, "over the limit"),
        ("stage_intent", {"type": "rm -rf /", "title": "t"}, "is not an action type"),
        # the one staging path's checks, as for the CLI: a type no handler carries out, a bad payload
        ("stage_intent", {"type": "wire_transfer", "title": "pay"}, "unknown action type 'wire_transfer'"),
        (
            "stage_intent",
            {"type": "email", "title": "t", "recipient": "a@b.org, c@d.org", "payload": {"body": "x"}},
            "exactly one address",
        ),
        ("stage_intent", {"type": "email", "title": "t", "recipient": "a@b.org"}, "payload.body is required"),
        ("stage_intent", {"type": "note", "title": big}, "over the limit"),
        ("explain_intent", {"intent_id": other_intent}, "intent"),
        ("explain_intent", {"intent_id": -1}, "greater than or equal"),
        ("search_memory", {"query": big}, "over the limit"),
        ("add_memory_note", {"text": big}, "over the limit"),
        ("progress", {"limit": 10**6}, "less than or equal"),
        ("draft_goal", {"title": ""}, "must not be empty"),
        ("draft_goal", {"title": "t", "body": ["x"]}, "valid string"),
    ]


async def test_bad_input_gets_a_clear_error_and_writes_nothing(op: Operator) -> None:
    """Wrong types, unknown or another profile's ids, 1 MB strings and deep payloads are refused by name."""
    other_task = op.json("operator", "board", "--profile", "other")["tasks"][0]["id"]
    other_intent = op.json(
        "operator", "intents", "add", "--profile", "other", "--type", "note", "--title", "theirs"
    )["id"]
    before = (
        op.json("operator", "board", "--profile", "me"),
        op.json("operator", "intents", "--profile", "me"),
    )
    async with op.client() as client:
        for tool, arguments, expected in _hostile_calls(other_task, other_intent):
            message = error(await client.call_tool(tool, arguments))
            assert expected in message, (tool, arguments if len(str(arguments)) < 200 else "...", message)
            assert "Traceback" not in message
    after = (
        op.json("operator", "board", "--profile", "me"),
        op.json("operator", "intents", "--profile", "me"),
    )
    assert after == before
    assert op.json("operator", "board", "--profile", "other")["tasks"][0]["status"] == "todo"
    assert len(op.json("operator", "goal", "show", "--profile", "me")) == 1


class RawServer:
    """`tickloop mcp serve` spoken to byte by byte, for what the SDK's client refuses to send."""

    def __init__(self, op: Operator) -> None:
        argv = [sys.executable, "-m", "tickloop", "mcp", "serve", "--profile", "me"]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=op.env
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        assert self.proc.stdout is not None
        out = self.proc.stdout
        self.reader = threading.Thread(target=lambda: [self.lines.put(line) for line in out], daemon=True)
        self.reader.start()
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        }
        self.ask(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}).encode())
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def ask(self, line: bytes) -> Any:
        self.send(line)
        return json.loads(self.lines.get(timeout=20))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=20)
        self.reader.join(timeout=20)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add_task","arguments":{"title":"\xff\xfe"}}}',
         "not valid UTF-8"),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add_task","arguments":{"title":"\\ud800"}}}',
         "lone surrogate"),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"stage_intent","arguments":{"type":"note",'
         b'"title":"t","payload":{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}}}}", "nests deeper"),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add_task","arguments":{"title":"t"}',
         "not valid JSON"),
    ],
)  # fmt: skip
def test_unreadable_messages_are_answered_not_dropped(
    sqlite_op: Operator, line: bytes, expected: str
) -> None:
    """Invalid UTF-8, lone surrogates, JSON bombs, torn JSON: a JSON-RPC error for the id; nothing written."""
    server = RawServer(sqlite_op)
    try:
        answer = server.ask(line)
        assert answer["id"] == 7
        assert expected in answer["error"]["message"]
        after = server.ask(
            b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"progress","arguments":{}}}'
        )
        assert after["id"] == 8  # the server is still serving
    finally:
        server.close()
    assert [t["title"] for t in sqlite_op.json("operator", "board", "--profile", "me")["tasks"]] == [
        "write tests"
    ]
    assert sqlite_op.json("operator", "intents", "--profile", "me") == []


@pytest.mark.parametrize(
    ("line", "answer_id", "expected"),
    [
        (b'[{"jsonrpc":"2.0","id":7,"method":"ping"}]', None, "batch"),
        (b"1", None, "must be a JSON object"),
        (b"null", None, "must be a JSON object"),
        (b'"ping"', None, "must be a JSON object"),
        (b"{}", None, '"jsonrpc": "2.0"'),
        (b'{"jsonrpc":"2.0"}', None, "no method"),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', None, "string or an integer"),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None, "string or an integer"),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', None, "string or an integer"),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', None, "string or an integer"),
        (b'{"jsonrpc":"1.0","id":7,"method":"ping"}', 7, '"jsonrpc": "2.0"'),
        (b'{"jsonrpc":"2.0","id":7,"method":5}', 7, "method must be a string"),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add_task","arguments":{"title":"'
         + b"x" * (2 * 1024 * 1024 + 10) + b'"}}}', 7, "over the limit of 2097152 bytes"),
    ],
)  # fmt: skip
def test_every_malformed_message_gets_a_json_rpc_error(
    sqlite_op: Operator, line: bytes, answer_id: object, expected: str
) -> None:
    """Batches, non-objects, wrong versions, bad ids and over-long lines each get an error, none dropped."""
    server = RawServer(sqlite_op)
    try:
        answer = server.ask(line)
        assert (answer["jsonrpc"], answer["id"], answer["error"]["code"]) == ("2.0", answer_id, -32600)
        assert expected in answer["error"]["message"]
        after = server.ask(b'{"jsonrpc":"2.0","id":8,"method":"ping"}')
        assert after == {"jsonrpc": "2.0", "id": 8, "result": {}}  # the server reads on after it
    finally:
        server.close()
    assert sqlite_op.json("operator", "board", "--profile", "me")["tasks"][0]["title"] == "write tests"
    assert len(sqlite_op.json("operator", "board", "--profile", "me")["tasks"]) == 1


async def test_the_face_never_offers_execution_approval_activation_or_settings(sqlite_op: Operator) -> None:
    """Every tool and resource, enumerated: none executes, decides, activates, configures or shows secrets."""
    sqlite_op.config(
        '[smtp]\nhost = "127.0.0.1"\nport = 2525\nsecurity = "plain"\nsenders = ["op@example.com"]\n'
        'username = "op"\npasswordEnv = "OP_SMTP_SECRET"\n'
        '[gate]\nallow = ["email"]\n'
    )
    sqlite_op.env["OP_SMTP_SECRET"] = "hunter2-very-secret"
    async with sqlite_op.client() as client:
        tools = (await client.list_tools()).tools
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        prompts = (await client.list_prompts()).prompts
        assert {t.name for t in tools} == EXPECTED_TOOLS == set(TOOLS)
        assert {t.uri_template for t in templates} == {
            "tickloop://intents/{id}",
            "tickloop://tasks/{id}",
            "tickloop://progress/{since}",
        }
        assert {p.name for p in prompts} == {"plan-next-step", "review-board"}
        for name in [t.name for t in tools] + [r.name for r in resources]:
            assert not any(word in name.lower() for word in FORBIDDEN), name
        for tool in tools:
            properties = set(tool.input_schema.get("properties", {}))
            assert not properties & {"status", "verdict", "tier", "dry_run", "approved", "decision_id"}, (
                tool.name
            )
        staged = data(
            await client.call_tool(
                "stage_intent",
                {
                    "type": "email",
                    "title": "Hi",
                    "recipient": "a@example.org",
                    "payload": {**SNEAKY, "body": "hi"},
                },
            )
        )
        assert (staged["intent"]["status"], staged["intent"]["tier"]) == ("requires_approval", "external")
        assert staged["intent"]["dry_run"] is True
        texts = [
            (await client.read_resource(str(r.uri))).contents[0].text  # type: ignore[union-attr]
            for r in resources
        ]
        for text in texts:
            assert "hunter2" not in text
            assert "OP_SMTP_SECRET" not in text
            assert "passwordEnv" not in text
    assert sqlite_op.json("operator", "intents", "--profile", "me", "--status", "approved") == []
    goals = sqlite_op.json("operator", "goal", "show", "--profile", "me")
    assert [g["status"] for g in goals] == ["active"]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ('[mcp]\nautoAllow = ["email"]\n', "autoAllow names 'email', which is not a reversible"),
        ('[mcp]\nautoAllow = ["teleport"]\n', "autoAllow names 'teleport'"),
        ('[mcp]\nautoAllow = "note"\n', "[mcp]"),
        ('[mcp]\nautoAlow = ["note"]\n', "autoAlow"),
    ],
)
def test_a_bad_mcp_section_stops_serve_at_start(sqlite_op: Operator, config: str, expected: str) -> None:
    """[mcp] autoAllow may name only reversible types; anything else is refused at start, exit 2."""
    sqlite_op.config(config)
    done = subprocess.run(
        [sys.executable, "-m", "tickloop", "mcp", "serve", "--profile", "me"],
        input="",
        capture_output=True,
        text=True,
        env=sqlite_op.env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert expected in done.stderr


async def test_auto_allow_lets_a_named_reversible_type_through(sqlite_op: Operator) -> None:
    """With [mcp] autoAllow = ["note"], an agent's note is ready at once; a wiki page still waits."""
    sqlite_op.config('[mcp]\nautoAllow = ["note"]\n')
    async with sqlite_op.client() as client:
        note = data(await client.call_tool("stage_intent", {"type": "note", "title": "jot"}))["intent"]
        wiki = data(await client.call_tool("stage_intent", {"type": "wiki_write", "title": "page"}))["intent"]
    assert (note["status"], wiki["status"]) == ("ready", "requires_approval")


async def test_templates_prompts_and_completions_answer_from_the_store(sqlite_op: Operator) -> None:
    """An agent reads one intent, one task and recent progress by template, fills both prompts from
    the store and completes ids; a bad template parameter is refused by name."""
    async with sqlite_op.client() as client:
        staged = data(await client.call_tool("stage_intent", {"type": "note", "title": "jot"}))["intent"]
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert templates == {
            "tickloop://intents/{id}",
            "tickloop://tasks/{id}",
            "tickloop://progress/{since}",
        }
        one = json.loads((await client.read_resource(f"tickloop://intents/{staged['id']}")).contents[0].text)  # type: ignore[union-attr]
        assert (one["intent"]["title"], one["intent"]["status"]) == ("jot", "requires_approval")
        task = json.loads((await client.read_resource("tickloop://tasks/1")).contents[0].text)  # type: ignore[union-attr]
        assert task["task"]["title"] == "write tests"
        rows = json.loads(
            (await client.read_resource("tickloop://progress/2000-01-01T00:00:00Z")).contents[0].text
        )  # type: ignore[union-attr]
        assert rows["rows"] == []
        for uri, words in [
            ("tickloop://intents/abc", "is not an id"),
            ("tickloop://progress/yesterday", "is not an ISO 8601 time"),
            ("tickloop://tasks/99999", "no task"),
        ]:
            with pytest.raises(MCPError, match=words):
                await client.read_resource(uri)
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert prompts == {"plan-next-step", "review-board"}
        plan = (await client.get_prompt("plan-next-step")).messages[0].content.text  # type: ignore[union-attr]
        assert "Ship v1" in plan
        assert "write tests" in plan
        board = (await client.get_prompt("review-board")).messages[0].content.text  # type: ignore[union-attr]
        assert "#1 [todo] p1 write tests" in board
        ref = ResourceTemplateReference(type="ref/resource", uri="tickloop://intents/{id}")
        done = await client.complete(ref, {"name": "id", "value": str(staged["id"])[0]})
        assert str(staged["id"]) in done.completion.values


@pytest.mark.timeout(120)
# resources/subscribe is the 2025 protocol's (what Claude Desktop, Cursor and the Inspector speak)
@pytest.mark.filterwarnings(
    "ignore:resources/subscribe is removed:mcp.shared.exceptions.MCPDeprecationWarning"
)
async def test_a_subscriber_learns_that_its_intent_was_decided(sqlite_op: Operator) -> None:
    """An agent subscribed to its intent gets notifications/resources/updated when the person
    approves it from the CLI, and reads the new status, without polling."""
    updates: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            arrived.set()

    async with Client(sqlite_op.params(), message_handler=on_message, mode="legacy") as client:
        caps = client.server_capabilities
        assert caps is not None
        assert caps.resources is not None
        assert caps.resources.subscribe is True
        staged = data(await client.call_tool("stage_intent", {"type": "note", "title": "jot"}))["intent"]
        uri = f"tickloop://intents/{staged['id']}"
        await client.subscribe_resource(uri)
        with pytest.raises(MCPError, match="not a resource"):
            await client.subscribe_resource("tickloop://secrets")
        await anyio.to_thread.run_sync(
            lambda: sqlite_op.cli("operator", "approve", str(staged["id"]), "--profile", "me")
        )
        with anyio.fail_after(30):
            await arrived.wait()
        assert updates == [uri]
        after = json.loads((await client.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
        assert after["intent"]["status"] == "approved"
