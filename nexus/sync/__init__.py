"""Many machines: git as the sync engine, merge rules per file kind, file-sync conflict copies."""
