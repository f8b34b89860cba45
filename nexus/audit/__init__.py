"""The whole-vault audit (`nexus verify`), above project/ and sync/: every finding in the vault."""
