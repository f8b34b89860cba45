"""Format and storage: durable writes, locks, the vault's paths, safe text, notes and the entry format."""
