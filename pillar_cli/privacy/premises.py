"""What a guarantee rests on beyond its mechanisms: that the class set and the public rows do not depend on
the private data. An embeddings file records how it fixed them — where its class set came from, how each row's
split was drawn, which rows --limit or --fraction kept — and every model, release and export made from it
carries that record, from which a statement's words are made.

A data holder makes a neighbour by deleting a record from the source and running the pipeline again. The
guarantee holds for that neighbour only if nothing but the DP outputs moves: the class set is declared (by the
source or the user), each row's split is drawn from its own key and the public seed, and the rows kept are
kept by their own draw. Where the file says otherwise, the statement says what is not covered.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

SOURCE, USER, LABELS = (
    "source",
    "user",
    "labels",
)  # where the class set came from (data/labels.py ClassSource)
# each row's own keyed draw; a seeded permutation of the whole source; rows given apart (Python): no draw;
# each row's split named by the holder (embed --split-from)
KEYED, PERMUTATION, GIVEN, DECLARED = "keyed", "permutation", "given", "declared"
ALL, FRACTION, LIMIT = "all", "fraction", "limit"  # which rows of the source were embedded


@dataclass(frozen=True, kw_only=True)
class Premises:
    """How an embeddings file fixed its class set, its splits and its rows."""

    classes: str = LABELS  # SOURCE, USER or LABELS
    splits: str = PERMUTATION  # KEYED, PERMUTATION, GIVEN or DECLARED
    kept: str = ALL  # which rows were embedded: ALL, FRACTION or LIMIT

    @classmethod
    def from_attrs(cls, attrs: dict | None) -> Premises:
        """The record a file holds; a file written before it was recorded: classes from the labels, permuted
        splits."""
        record = attrs or {}
        return cls(
            classes=str(record.get("classes", LABELS)),
            splits=str(record.get("splits", PERMUTATION)),
            kept=str(record.get("kept", ALL)),
        )

    def to_attrs(self) -> dict[str, str]:
        return asdict(self)

    def rests_on(self) -> list[str]:
        """What the guarantee assumes of the public side, in words, where this record shows it holds."""
        said = []
        if self.classes in (SOURCE, USER):
            by = "the source" if self.classes == SOURCE else "the user (--classes)"
            said.append(f"the class set, declared by {by}, not read from the private labels")
        if self.splits == GIVEN:
            said.append("the public rows: given apart from the private rows by the caller (no split drawn)")
        if self.splits == DECLARED:
            said.append(
                "the splits: named for each record by the data holder (embed --split-from), the holder's "
                "choice, taken to be a function of each record alone; pillar refused a file whose splits "
                "followed the labels or split a person"
            )
        if self.splits == KEYED and self.kept != LIMIT:
            said.append(
                "the public rows: each row's split is drawn from its own key and the public seed, so "
                "deleting a private record moves no other row"
            )
        return said

    def not_covered(self) -> list[str]:
        """What the guarantee does not cover because of how the file fixed its class set, splits or rows."""
        said = []
        if self.classes not in (SOURCE, USER):
            said.append(
                "the class set, read from the labels of every row (--classes-from-labels, a file that "
                "records no declaration, or a fit given no classes=): a label only private rows hold adds a "
                "class, which every head shows"
            )
        if self.splits not in (KEYED, GIVEN, DECLARED):
            said.append(
                "the public rows: a seeded permutation of the whole source (a file that records no keyed "
                "split), which moves when a private record is deleted"
            )
        elif self.kept == LIMIT:
            said.append(
                "the public rows: --limit kept the rows of the smallest draws, so deleting a record may let "
                "another in"
            )
        return said
