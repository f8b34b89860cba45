"""``python -m nexus`` runs the CLI."""

from .surfaces.cli import main

raise SystemExit(main())
