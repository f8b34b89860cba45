"""``python -m nexus`` runs the CLI."""

from .cli import main

raise SystemExit(main())
