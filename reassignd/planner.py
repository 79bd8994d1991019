"""Interim: `reassignd planner` until its parser moves here from planner_service.cli."""

from __future__ import annotations


def main(argv: list[str]) -> int:
    from planner_service import cli

    return cli.main(argv)
