"""Decisions, project state, checkpoints and the morning handoff."""
