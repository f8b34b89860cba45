"""The rules block every runtime's instructions file gets (CLAUDE.md, AGENTS.md, a Cursor rule…)."""

from __future__ import annotations


def text(agent: str, *, injected: bool) -> str:
    """The rules for ``agent``; ``injected``: the runtime's hooks inject the brief before each turn."""
    first = (
        "Your brief (identity, what you owe, decisions in force, your checkpoint, your memory, and "
        "what the others wrote since you last read) is injected at session start and, when "
        "something is new, before each turn."
        if injected
        else "Call the `brief` tool before each response (at least at the start of every session)."
    )
    return f"""## Working with the other agents (nexus)

You are `{agent}`. You share a live-context log with other agents and with people, in the nexus vault;
the nexus MCP tools act as you.

1. **Read the live context before you respond.** {first}
2. **After every meaningful turn, append one entry** with `log_append` (type note, question,
   correction or handoff; a one-line summary).
3. **Acknowledge what the others wrote** when an entry of type correction, decision, handoff or
   question is addressed to the team: `acknowledge` with its id.
4. **Reconcile races**: when your brief lists a race, call `reconcile` with both ids and say what
   now holds.
5. **Never edit an entry**, yours or another's; correct with a new entry of type `correction`.
6. **Follow the decisions in force.** To change one, record a new decision with `decide`
   (`supersedes` the old id); never work around it.
7. **Save a checkpoint every few tool calls** with `checkpoint_save` (task, step done, next step).
8. **Keep what should outlive the session** with `retain`: it waits for a person's approval before
   it reaches memory.
9. **Claim files before you change them** with `claim` (globs relative to the project, or
   `task:NAME`; a reason) and `release` them when done. When a claim or an edit is refused, the
   answer names who holds it: ask them on the log, or work on something else.
"""
