"""Bounded memory, facts, the retention bank and its human gate, the safety scan."""
