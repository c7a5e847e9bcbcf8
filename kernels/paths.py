"""Code paths that kernels share (see kernels.spec.CodePath): loops over blocks, masked tails, grouped grids.

Each takes a function that gives the block the launcher will use for a case and config, so the path mirrors
the launcher's own arithmetic (including its clamping to the next power of two of the size).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kernels.spec import Case, CodePath, cdiv

BlockOf = Callable[[Case, Mapping[str, Any]], int]


def block_loop(dim: str, block_of: BlockOf, what: str = "the loop over blocks",
               size: Callable[[Case], int] | None = None) -> tuple[CodePath, ...]:
    """``{dim}_loop``: the dim spans more than one block; ``{dim}_tail``: its last block is masked. ``size``: the
    length the loop runs over where it is no dim of the case but computed from dims (the rows of a flattened
    ``[B, S, K]`` input: ``size=lambda case: case.shape["B"] * case.shape["S"]``); ``dim`` then only names the paths."""
    length = size or (lambda case: case.shape[dim])
    return (
        CodePath(f"{dim.lower()}_loop", f"{what} along {dim} runs more than once",
                 lambda case, cfg: cdiv(length(case), block_of(case, cfg)) > 1),
        CodePath(f"{dim.lower()}_tail", f"{dim} is not a multiple of its block: the last block is masked",
                 lambda case, cfg: length(case) % block_of(case, cfg) != 0),
    )


def grouped_grid(rows: str, block_of: BlockOf, group: str = "GROUP_M") -> tuple[CodePath, ...]:
    """Grouped tile order: the grid spans several groups of row blocks, and the last group is partial."""

    def groups(case: Case, cfg: Mapping[str, Any]) -> tuple[int, int]:
        return cdiv(case.shape[rows], block_of(case, cfg)), int(cfg.get(group, 1))

    return (
        CodePath("several_groups", f"the grid spans more than one {group} group of {rows} blocks",
                 lambda case, cfg: groups(case, cfg)[0] > groups(case, cfg)[1]),
        CodePath("partial_last_group", f"the last {group} group holds fewer {rows} blocks than the others",
                 lambda case, cfg: groups(case, cfg)[0] > groups(case, cfg)[1] > 1
                 and groups(case, cfg)[0] % groups(case, cfg)[1] != 0),
    )


def meta(name: str, default: int) -> BlockOf:
    """The block is the config's ``name`` (``default`` where the config leaves it out)."""
    return lambda case, cfg: int(cfg.get(name, default))
