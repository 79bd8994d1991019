"""``reassignd users add|remove|list``: SCRAM users in ZooKeeper (:mod:`controller.shell.security.users`,
where the parser lives with the credential rules it checks: mechanisms, iteration bounds).

Imported when the command runs, as the controller's modules are (see :mod:`reassignd.controller`).
"""

from __future__ import annotations


def main(argv: list[str]) -> int:
    from controller.shell.security import users

    return users.main(argv)
