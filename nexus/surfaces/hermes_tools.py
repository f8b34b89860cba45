"""The tools nexus's Hermes memory provider offers the model (``hermes.py``: ``get_tool_schemas``,
``handle_tool_call``): their schemas in Hermes' format, and what a call of each does, in the vault as
the provider's agent. Each is a few of the operations the CLI and the MCP tools run (the brief, a log
append or acknowledgement, search, a decision, a checkpoint), imported when it is called.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..settings import Settings
    from ..storage.vault import Vault
    from ..trust import Trust


def schemas() -> list[dict[str, Any]]:
    """The tools, as Hermes' ``get_tool_schemas`` lists them."""

    def tool(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required},
        }

    text = {"type": "string"}
    return [
        tool(
            "nexus_brief",
            "Your nexus brief: what the other agents wrote, what you owe, decisions "
            "in force, your checkpoint and memory.",
            {},
            [],
        ),
        tool(
            "nexus_log_append",
            "Append one signed entry to the shared live log after a meaningful turn.",
            {
                "channel": {**text, "description": "Topic: lowercase letters, digits, dashes."},
                "type": {
                    "type": "string",
                    "enum": ["note", "question", "correction", "handoff"],
                    "description": "What kind of entry.",
                },
                "summary": {**text, "description": "One line: what happened."},
                "body": {**text, "description": "Optional details, Markdown."},
            },
            ["channel", "type", "summary"],
        ),
        tool(
            "nexus_acknowledge",
            "Acknowledge entries by the other agents so you no longer owe them.",
            {
                "ids": {"type": "array", "items": text, "description": "Entry ids."},
                "summary": {**text, "description": "One line: what you take from them."},
            },
            ["ids"],
        ),
        tool(
            "nexus_search",
            "Search the shared vault (log, decisions, notes, facts) with provenance.",
            {"query": {**text, "description": "Words to look for."}},
            ["query"],
        ),
        tool(
            "nexus_decide",
            "Record a team decision (a signed note).",
            {
                "title": {**text, "description": "A short title."},
                "decision": {**text, "description": "What was decided."},
                "rationale": {**text, "description": "Why."},
            },
            ["title", "decision", "rationale"],
        ),
        tool(
            "nexus_checkpoint",
            "Save your working context so a new session can resume.",
            {
                "task": {**text, "description": "The task, one line."},
                "step": {**text, "description": "The step just done."},
                "next": {**text, "description": "The next step."},
            },
            ["task", "step", "next"],
        ),
    ]


def call(
    name: str,
    args: dict[str, Any],
    *,
    vault: Vault,
    agent: str,
    keys_home: Path,
    settings: Settings,
    trust: Trust,
) -> Any:
    """Do what the tool ``name`` asks with ``args`` as ``agent`` (its answer as JSON data); a tool it does
    not know is a ``KeyError``."""
    from .. import search
    from ..keys import identity
    from ..ledger import log
    from ..project import checkpoints, decisions
    from ..team import brief

    st = settings
    if name == "nexus_brief":
        return {"text": brief.render(brief.build(vault, agent, st, trust=trust))}
    if name == "nexus_search":
        return {
            "items": [
                {"title": h.title, "snippet": h.snippet, "link": h.link, "agent": h.agent, "time": h.time}
                for h in search.search(
                    vault, args["query"], limit=8, languages=st.search_languages, trust=trust
                )
            ]
        }
    if name == "nexus_checkpoint":
        cp, _ = checkpoints.save(
            vault,
            agent,
            task=args["task"],
            step=args["step"],
            next=args["next"],
            keys_home=keys_home,
        )
        return {"saved": cp.saved, "version": cp.seq}
    signer = identity.load_signer(vault, keys_home, agent)
    if name == "nexus_log_append":
        done = log.append(
            vault,
            signer,
            channel=args["channel"],
            type=args["type"],
            summary=args["summary"],
            body=args.get("body"),
            trust=trust,
        )
        return {"id": done.located.entry.id, "link": done.located.link}
    if name == "nexus_acknowledge":
        done = log.append(
            vault,
            signer,
            channel="general",
            type="ack",
            summary=args.get("summary") or "acknowledged",
            ack=tuple(args["ids"]),
            trust=trust,
        )
        return {"id": done.located.entry.id, "link": done.located.link}
    if name == "nexus_decide":
        d = decisions.decide(
            vault,
            signer,
            title=args["title"],
            decision=args["decision"],
            rationale=args["rationale"],
            trust=trust,
        )
        return {"id": d.id, "link": d.link}
    raise KeyError(name)
