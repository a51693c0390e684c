"""How many feasible nodes a cycle looks for before it scores (upstream's adaptive sampling)."""

from __future__ import annotations


def num_feasible_nodes_to_find(profile_pct: int | None, global_pct: int, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (upstream's adaptive sampling)."""
    min_nodes = 100
    if num_all_nodes < min_nodes:
        return num_all_nodes
    pct = profile_pct if profile_pct is not None else global_pct
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, 5)
    return max(num_all_nodes * pct // 100, min_nodes)
