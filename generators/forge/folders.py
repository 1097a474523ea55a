"""Replacing a whole output folder so readers never see it half-written."""
from __future__ import annotations

import shutil
from pathlib import Path


def swap_in(staging: Path, final: Path) -> None:
    """Put the finished `staging` folder at `final`: the old one is moved aside first and removed
    only once the new one is in place, so `final` is at all times the old tree or the new one."""
    old = final.with_name(final.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    staging.rename(final)
    shutil.rmtree(old, ignore_errors=True)
