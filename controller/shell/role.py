"""What this controller instance is right now: active (holding an ActiveController) or standby.

The daemon sets it as elections come and go; the admin handlers read it to answer
NOT_CONTROLLER. It lives apart from both so that neither imports the other.

    role = Role(101)
    role.is_active        # False until the daemon wins an election
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from controller.shell.active import ActiveController
    from znodes.api import Store


class Role:
    """What this instance is right now; the admin handler answers NOT_CONTROLLER from it."""

    def __init__(self, controller_id: int):
        self.controller_id = controller_id
        self.active: ActiveController | None = None
        self.store: Store | None = None

    @property
    def is_active(self) -> bool:
        return self.active is not None
