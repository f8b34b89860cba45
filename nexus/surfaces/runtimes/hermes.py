"""Hermes Agent: the nexus memory provider plugin in ``$HERMES_HOME/plugins/nexus/`` (``__init__.py``
+ ``plugin.yaml``), selected with ``memory.provider: nexus`` and configured under ``plugins.nexus``
in ``$HERMES_HOME/config.yaml``. ``$HERMES_HOME`` defaults to ``~/.hermes``: Hermes reads no project
configuration, so the only scope is the user's.

The plugin is ``hermes_plugin.py``, written as it is: it holds no path. Hermes runs in its own Python
environment, so the plugin never imports nexus; it runs ``nexus hermes-provider`` (the ``nexus`` on
PATH) and forwards each provider call to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .configfiles import exact, table, yaml_merge
from .wiring import Change, Wiring

SCOPES = ("user",)  # Hermes has one configuration per user (or per $HERMES_HOME)

PLUGIN_YAML = """name: nexus
version: 2.0.0
description: "nexus: shared, signed, inspectable memory for agents that work together (Markdown vault)"
hooks:
  - on_session_end
  - on_pre_compress
  - on_memory_write
"""


def plugin_source() -> str:
    return Path(__file__).with_name("hermes_plugin.py").read_text(encoding="utf-8")


def hermes_home(w: Wiring) -> Path:
    return Path(w.env["HERMES_HOME"]).expanduser() if w.env.get("HERMES_HOME") else w.home / ".hermes"


def changes(w: Wiring) -> list[Change]:
    home = hermes_home(w)
    plugin = home / "plugins" / "nexus"
    config = home / "config.yaml"

    def edit(data: dict[str, Any]) -> None:
        table(data, "memory")["provider"] = "nexus"
        table(table(data, "plugins"), "nexus").update(
            vault=str(w.vault), agent=w.agent, keys_home=str(w.keys_home)
        )

    return [
        Change(
            plugin / "__init__.py",
            "the nexus memory provider plugin (runs `nexus hermes-provider` from PATH)",
            exact(plugin_source()),
        ),
        Change(plugin / "plugin.yaml", "the plugin's manifest", exact(PLUGIN_YAML)),
        Change(
            config, "memory.provider: nexus, plugins.nexus (vault, agent, keys)", yaml_merge(config, edit)
        ),
    ]
