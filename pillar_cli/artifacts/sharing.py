"""Which files a user may share and which are working files, per artifact kind: the one table `write` (a
shareable file names its inputs without their content hashes), `inspect` (a working file says what it holds)
and docs/privacy.md follow.

A shareable file holds DP outputs and public facts only: no hash, size or fingerprint of a file that holds
private rows (the same in every run of one dataset and different without one record, it would tell membership
for certain to anyone who can make both files), and no count but a released one. A working file holds what a
stage needs to check its inputs and the next stage's: hashes of the files it read, the source's fingerprint,
row ids, exact statistics; it stays with the data holder.
"""

from __future__ import annotations

from dataclasses import replace

from pillar_cli.artifacts.artifact import InputRef

# a release of one head; the metrics of released heads
SHAREABLE_KINDS = frozenset({"classifier", "evaluation"})
WORKING = {  # what a working file holds that must not leave the data holder
    "embeddings": "the features, labels and row ids of every split, and the source's fingerprint",
    "embedding-shard": "one shard's features, labels and row ids",
    "projection": "the content hash of the embeddings it was fitted on and the source's fingerprint (its "
    "public scaler and basis ship in a release)",
    "model": "every head of the grid, the exact number of training rows, private row ids and val accuracies",
    "gsd": "the content hash of the private split it read",
    "assumptions": "statistics of labelled rows read without DP",
    "audit": "the canaries, the guesses and the configuration audited",
}
WITHHELD = ""  # the content hash a shareable file records for an input that holds private rows


def shared_input(ref: InputRef) -> InputRef:
    """An input as a shareable file names it: its path, kind and split, and a content hash only where the
    input is itself shareable."""
    return ref if ref.kind in SHAREABLE_KINDS else replace(ref, content_hash=WITHHELD)


def sharing_note(kind: str) -> str:
    """What `inspect` says of a file of this kind: shareable, or a working file and what it holds."""
    if kind in SHAREABLE_KINDS:
        return (
            "shareable: DP outputs and public facts only; no hash, size or count of a file holding private "
            "rows (its inputs are named without their content hashes)"
        )
    return f"working file, not to be shared: it holds {WORKING[kind]}"
