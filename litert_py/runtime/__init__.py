"""Execution: interpreter surface, subgraphs, arena planner."""
