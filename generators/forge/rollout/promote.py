"""`forge promote RING`: move the ring's ref to the commit the ring before it runs, once that
ring passes its gates (the first ring: to the source branch, gated by the review and CI that let
a change onto it). `--to REV`: roll the ring back to a commit it ran before, without gates."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from forge.argocd.bootstrap import ring_ref
from forge.errors import ForgeError
from forge.fleet import Fleet
from forge.rollout import gates
from forge.rollout.refs import Repo
from forge.rollout.rings import Rings, members


@dataclass
class Decision:
    ring: str
    ref: str
    commit: str  # where the ref goes (or would have gone)
    old: str | None
    reasons: list[str] = field(default_factory=list)  # why not; [] = it may move
    source: str = ""
    accepted: list[str] = field(default_factory=list)  # per-node reasons accepted on the record

    @property
    def allowed(self) -> bool:
        return not self.reasons

    def lines(self) -> list[str]:
        if self.reasons:
            return [f"refused: {self.ref} stays at {_short(self.old)}; {self.source} does not pass its gates:",
                    *(f"  - {r}" for r in self.reasons)]
        if self.old == self.commit:
            return [f"{self.ref} already at {_short(self.commit)} ({self.source})"]
        return [f"promoted: {self.ref} {_short(self.old)} -> {_short(self.commit)} ({self.source})",
                *(f"  accepted on the record ({NOTES_REF}): {r}" for r in self.accepted)]


def _short(commit: str | None) -> str:
    return commit[:12] if commit else "(none)"


NOTES_REF = "refs/notes/forge/accepted"  # git notes on the promoted commit: who accepted which nodes, why


def decide(fleet: Fleet, rings: Rings, ring: str, repo: Repo, now: dt.datetime, to: str | None = None,
           accept: str | None = None) -> Decision:
    """What promoting `ring` would do, and why not if it may not (reads the APIs, moves nothing)."""
    target = rings.get(ring)
    previous = rings.previous(target.name)
    ref = ring_ref(target.name)
    repo.fetch([ref, rings.source] + ([ring_ref(previous.name)] if previous else []))
    old = repo.resolve(ref)
    if to is not None:
        commit = repo.commit_of(to)
        if old is None or not repo.is_ancestor(commit, old):
            raise ForgeError(f"--to: {to} is not a commit {ref} ran (an ancestor of {_short(old)}): a roll back goes to an earlier one")
        return Decision(target.name, ref, commit, old, source=f"rolled back to {to}")
    if previous is None:
        commit = repo.resolve(rings.source)
        if commit is None:
            raise ForgeError(f"no branch {rings.source} in {repo.path} (rings.yaml source)")
        return Decision(target.name, ref, commit, old, source=f"from {rings.source}, the first ring's source")
    commit = repo.resolve(ring_ref(previous.name))
    if commit is None:
        raise ForgeError(f"ring {previous.name} has no ref {ring_ref(previous.name)} yet: promote {previous.name} first")
    reasons = gates.ring_reasons(members(fleet, previous.name), previous, commit, now)
    accepted = [r for r in reasons if isinstance(r, gates.PerNode)] if accept else []
    reasons = [r for r in reasons if r not in accepted]
    return Decision(target.name, ref, commit, old, reasons, source=f"what ring {previous.name} runs", accepted=accepted)


def promote(fleet: Fleet, rings: Rings, ring: str, repo: Repo, now: dt.datetime, to: str | None = None,
            dry_run: bool = False, accept: str | None = None) -> Decision:
    if accept is not None and not accept.strip():
        raise ForgeError("--accept: give the reason the nodes are accepted (a ticket, who, why), not an empty one")
    decision = decide(fleet, rings, ring, repo, now, to, accept)
    if decision.allowed and decision.old != decision.commit and not dry_run:
        if decision.accepted:
            note = "\n".join([f"forge promote {ring} at {now.isoformat()}: accepted: {accept}", *decision.accepted])
            repo.note(NOTES_REF, decision.commit, note)
        repo.move(decision.ref, decision.commit, decision.old)
    return decision
