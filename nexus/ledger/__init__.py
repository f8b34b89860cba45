"""The live-context log: signed appends, reading, verification, shadows and restores."""
