"""The neighbouring relation: what two neighbouring datasets differ by, as a value that mechanisms state, the
accountants pass to dp-accounting, and privacy/guarantee.py turns into words."""

from __future__ import annotations

import enum


class Relation(enum.Enum):
    """What neighbouring datasets differ by, as dp-accounting's `NeighboringRelation` names it: one unit added
    or removed, or one unit's value replaced."""

    ADD_OR_REMOVE_ONE = "add or remove one"
    REPLACE_ONE = "replace one"

    @property
    def short(self) -> str:
        return {Relation.ADD_OR_REMOVE_ONE: "add/remove-one", Relation.REPLACE_ONE: "replace-one"}[self]

    def to_dp_accounting(self) -> object:
        """dp-accounting's value for it."""
        from dp_accounting import NeighboringRelation

        return NeighboringRelation[self.name]


ACCOUNTED = Relation.ADD_OR_REMOVE_ONE  # the relation every event's ε is accounted under (privacy/events.py)
ROW_RELATIONS = (ACCOUNTED,)  # what every row-level mechanism in pillar is analysed under
