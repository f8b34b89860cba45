"""`nexus watch`: the observer, what it does to segments (the keeper), its workers and heartbeat."""
