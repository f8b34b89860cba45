"""``python -m nexus`` runs the ``nexus`` program (``surfaces/program.py``: ``nexus mcp``'s fast start,
else the CLI)."""

from .surfaces.program import main

raise SystemExit(main())
