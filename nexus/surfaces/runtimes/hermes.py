"""Hermes Agent: the nexus memory provider plugin in ``$HERMES_HOME/plugins/nexus/`` (``__init__.py``
+ ``plugin.yaml``), selected with ``memory.provider: nexus`` and configured under ``plugins.nexus``
in ``$HERMES_HOME/config.yaml``. ``$HERMES_HOME`` defaults to ``~/.hermes``: Hermes reads no project
configuration, so the only scope is the user's.

The plugin is ``hermes_plugin.py``, written as it is: it holds no path. Hermes runs in its own Python
environment, so the plugin never imports nexus; it runs ``nexus hermes-provider`` (the ``nexus`` on
PATH) and forwards each provider call to it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

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


def check(w: Wiring) -> list[tuple[str, str]]:
    """Hermes' own view, beyond the files: whether its plugin can start nexus (the ``nexus`` on the PATH
    in ``w.env``, or ``plugins.nexus.command``) and whether that nexus says it is available (vault,
    agent and private key found from Hermes' config.yaml). Each problem: what is missing, and the one
    command that adds it."""
    config = hermes_home(w) / "config.yaml"
    try:
        data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        data = {}
    cfg = ((data.get("plugins") or {}).get("nexus") or {}) if isinstance(data, dict) else {}
    command = str(cfg.get("command") or "nexus")
    found = shutil.which(os.path.expanduser(command), path=w.env.get("PATH"))
    if found is None:
        return [
            (
                f"`{command}` is not on PATH, so Hermes' nexus plugin cannot start it (Hermes then runs "
                "without nexus)",
                f'export PATH="{Path(w.nexus).parent}:$PATH"',
            )
        ]
    env = {k: v for k, v in w.env.items() if not k.startswith("NEXUS_")}
    env["HERMES_HOME"] = str(hermes_home(w))
    try:
        proc = subprocess.run(
            [found, "hermes-provider"],
            input='{"call": "is_available"}\n',
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        available = json.loads(proc.stdout.splitlines()[0]).get("result") is True
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as err:
        return [(f"{found} hermes-provider does not answer ({err})", f"nexus setup hermes --agent {w.agent}")]
    if not available:
        why = " ".join(proc.stderr.split())[-200:] or "no reason given"
        return [(f"nexus is not available to Hermes: {why}", f"nexus setup hermes --agent {w.agent}")]
    return []
