"""Which clusters a run covers: `--cluster` names checked against the fleet's."""
from __future__ import annotations

from forge.errors import ForgeError

def check_clusters(only: tuple[str, ...] | list[str], known) -> None:
    """Refuse --cluster names that are not clusters: one line naming every unknown one and the
    clusters there are."""
    unknown = [c for c in dict.fromkeys(only) if c not in set(known)]
    if unknown:
        many = len(unknown) > 1
        raise ForgeError(f"--cluster {', '.join(unknown)}: no such cluster{'s' if many else ''} "
                         f"(clusters: {', '.join(sorted(set(known))) or 'none'})")

