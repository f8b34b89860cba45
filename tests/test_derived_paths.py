"""A path read from derived JSON (the coordination state's refs) is opened only inside the vault's log."""

from __future__ import annotations

import pytest
from conftest import Env

from nexus.errors import NotFoundError
from nexus.team import coordination, coordination_state
from nexus.trust import NO_PINS


@pytest.mark.parametrize("how", ["dotdot", "link"])
def test_a_ref_whose_file_leads_out_of_the_vault_is_never_opened(env: Env, how: str) -> None:
    located = env.append("ella", "the only copy is outside").located
    segment = env.vault.root / located.file
    outside = env.vault.root.parent / "outside.md"
    outside.write_bytes(segment.read_bytes())  # (the entry's bytes, at the same offsets, outside)
    segment.write_bytes(segment.read_bytes()[: located.offset])  # (and gone from the log)
    if how == "dotdot":
        file = "../outside.md"
    else:
        (env.vault.log_dir / "elsewhere.md").symlink_to(outside)
        file = "log/elsewhere.md"
    ref = coordination_state.Ref.of(located)._replace(file=file)
    with pytest.raises(NotFoundError):
        coordination.materialize(env.vault, ref, coordination.entry_checker(env.vault, NO_PINS))
