"""The ways in: the shell, runtime hooks, MCP, Hermes Agent, `nexus setup` for each runtime."""
