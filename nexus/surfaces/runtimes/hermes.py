"""Hermes Agent: the nexus memory provider plugin in ``$HERMES_HOME/plugins/nexus/`` (``__init__.py``
+ ``plugin.yaml``), selected with ``memory.provider: nexus`` and configured under ``plugins.nexus``
in ``$HERMES_HOME/config.yaml``. Hermes runs in its own Python environment: the plugin puts nexus's
installation folders at the END of ``sys.path`` when ``import nexus`` fails, so Hermes' own pinned
packages always win. ``$HERMES_HOME`` defaults to ``~/.hermes``; there is no project scope.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .configfiles import exact, table, yaml_merge
from .wiring import Change, Wiring

PLUGIN_YAML = """name: nexus
version: 1.0.0
description: "nexus: shared, signed, inspectable memory for agents that work together (Markdown vault)"
hooks:
  - on_session_end
  - on_pre_compress
  - on_memory_write
"""


def _nexus_paths() -> list[str]:
    """Where this nexus and its dependencies are importable from."""
    import sysconfig

    import nexus

    paths = [
        str(Path(nexus.__file__).resolve().parent.parent),
        sysconfig.get_path("purelib"),
        sysconfig.get_path("platlib"),
    ]
    return list(dict.fromkeys(p for p in paths if p))


def plugin_source(paths: list[str]) -> str:
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return f'''"""nexus memory provider for Hermes Agent (by `nexus setup hermes`)."""
import sys

# where nexus and its dependencies are installed (python {version})
_NEXUS_PATHS = {paths!r}

try:
    import nexus  # noqa: F401
except ImportError:  # Hermes' own environment: add nexus's, after Hermes' own packages
    sys.path.extend(p for p in _NEXUS_PATHS if p not in sys.path)

from nexus.surfaces.hermes import NexusMemoryProvider, register  # noqa: E402,F401  (register_memory_provider)
'''


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
            plugin / "__init__.py", "the nexus memory provider plugin", exact(plugin_source(_nexus_paths()))
        ),
        Change(plugin / "plugin.yaml", "the plugin's manifest", exact(PLUGIN_YAML)),
        Change(
            config, "memory.provider: nexus, plugins.nexus (vault, agent, keys)", yaml_merge(config, edit)
        ),
    ]
