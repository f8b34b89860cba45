"""Coordination: the brief, what is owed, races, a runtime session's turns, the watcher's liveness."""
