"""Where a projection's public data comes from, checked before training: the embeddings' own public split,
another public dataset (asked for explicitly), or a split chosen by a GSD ranking, inside the privacy ledger.

`fit-pca --public-from gsd.h5` fits on one of the ranking's candidates (the closest unless one is named) and
the projection records the choice: the GSD artifact (also in its provenance), the private split the GSD read,
and the DP release's ledger. A GSD without DP read the private split outside any DP release: it is refused
unless allowed explicitly, and then every model says so. Training checks that the GSD read the very private
split it trains on and composes the release with every run's ε (privacy/guarantee.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pillar_cli.artifacts import Artifact, Split, derived_from, parse_ref, read_split, shared_rows
from pillar_cli.artifacts.gsd import GsdRanking
from pillar_cli.artifacts.model_record import PublicChoice
from pillar_cli.artifacts.projection_header import ProjectionHeader
from pillar_cli.errors import ArtifactError, DataError, PrivacyError, UsageError, param
from pillar_cli.privacy.release import DPRelease, Released

NONPRIVATE_NOTE = (
    "public data chosen with non-private access to the private split (a GSD without DP): NOT in ε"
)


def chosen_candidate(gsd: Artifact, named: str | None) -> str:
    """The candidate to fit on: `named` (which must be one of the ranking's), else the closest."""
    ranking = GsdRanking.of(gsd)
    if named is None:
        return ranking.closest
    names = ranking.candidates
    matches = [name for name in names if _same_split(name, named)]
    if not matches:
        raise UsageError(f"{named} is not among the candidates {gsd.path} ranked ({', '.join(names)})")
    return matches[0]


def public_choice(gsd: Artifact, candidate: str, public: Split, allow_nonprivate: bool) -> PublicChoice:
    """What a projection fitted on `public` (the candidate `candidate` of `gsd`) records about that choice."""
    ranking = GsdRanking.of(gsd)
    release = ranking.release
    if release is None and not allow_nonprivate:
        raise PrivacyError(
            f"{gsd.path} ranked its candidates with non-private access to the private split",
            hint=f"rank them with DP-GSD (gsd's {param('dp_eps')}), or pass "
            f"{param('allow_nonprivate_choice', True)} "
            "(recorded; every model trained on the projection says so)",
        )
    private_input, *candidate_inputs = gsd.provenance.inputs
    recorded = candidate_inputs[ranking.candidates.index(candidate)]
    if recorded.content_hash != public.ref.content_hash:
        raise DataError(
            f"{public.ref.path} changed since {gsd.path} ranked it (content hash "
            f"{public.ref.content_hash[:12]}… against {recorded.content_hash[:12]}…)"
        )
    return PublicChoice(
        gsd=gsd.ref().to_dict(),
        candidate=candidate,
        gsd_distance=ranking.distance(candidate),
        private_input=private_input.to_dict(),
        release=release,
        note=NONPRIVATE_NOTE
        if release is None
        else f"public data chosen by a DP-GSD release ({release.words}): composed into every run's ε",
    )


def require_chosen_for(projection: Artifact, private: Split) -> None:
    """Training on a projection whose public split a GSD chose: the GSD must have read this private split, and
    the projection's rows (another file of the same source, e.g. another split seed) must not be private
    rows."""
    recorded = PublicChoice.of(projection).private_input
    if (recorded["content_hash"], recorded["split"]) != (private.ref.content_hash, private.ref.split):
        raise DataError(
            f"the projection's public split was chosen by a GSD on another private split "
            f"({recorded['path']}:{recorded['split']}), not {private.ref.path}:{private.name}"
        )
    _require_no_private_rows(projection, private)


def public_data_of(projection: Artifact, private: Split, other_public: bool) -> dict:
    """The public data behind a projection, checked for training on `private`, as every model records it: the
    embeddings file's own public split, a split a GSD ranking chose, or, only when asked for, another public
    dataset embedded with the same backbone that holds none of the private rows (Table 2(a) of the paper)."""
    header = ProjectionHeader.of(projection)
    fitted_on, origin = header.fitted_on or {}, header.origin
    if header.private_release is not None:
        release = DPRelease.from_attrs(header.private_release, Released.PROJECTION)
        if (fitted_on.get("content_hash"), fitted_on.get("split")) != (
            private.ref.content_hash,
            private.ref.split,
        ):
            raise DataError(
                f"{projection.path} is a DP-PCA of {origin}, not of {private.ref.path}:{private.name}: "
                "its release covers the rows it read, not these"
            )
        return {
            "fitted_on": origin,
            "rows": None,
            "kind": "DP-PCA of the private split",
            "public_share": None,
            "note": f"projection fitted on the private rows of {origin} by a DP release ({release.words}): "
            "composed into every run's ε",
        }
    if header.public_choice is not None:
        require_chosen_for(projection, private)
        kind = "chosen by a GSD ranking"
    elif derived_from(projection, private.ref):
        # the provenance naming the file is outside the content hash
        _require_no_private_rows(projection, private)
        kind = "the embeddings' own public split"
    elif not other_public:
        raise ArtifactError(
            f"{projection.path} was fitted on other data ({origin}) than {private.ref.path}",
            hint="refit the projection on these embeddings' public split, or pass "
            f"{param('other_public', True)} to train on a projection of another public dataset",
        )
    else:
        _require_compatible(projection, private)
        kind = "another public dataset"
    own = projection.attrs.get("source_fingerprint") == private.source_fingerprint is not None
    return {
        "fitted_on": origin,
        "rows": header.n_public,
        "kind": kind,
        "public_share": header.public_share,
        "own_source": own,
        "note": f"projection fitted on {header.n_public} public rows of {origin} ({kind}"
        + (", records of the private rows' own source, unprotected)" if own else ")"),
    }


def _require_compatible(projection: Artifact, private: Split) -> None:
    """Another dataset's projection: the same feature space, and none of its rows private."""
    backbones = (ProjectionHeader.of(projection).backbone, private.backbone)
    if backbones[0] != backbones[1]:
        raise DataError(
            f"{projection.path} was fitted on {backbones[0]} features, {private.ref.path} holds "
            f"{backbones[1]} features"
        )
    if (dim := projection.arrays["mean"].size) != private.features.shape[1]:
        raise DataError(
            f"{projection.path} was fitted on {dim}-dimensional features, {private.ref.path} holds "
            f"{private.features.shape[1]}"
        )
    _require_no_private_rows(projection, private)


def _require_no_private_rows(projection: Artifact, private: Split) -> None:
    if overlap := shared_rows(private, projection, ("public",)):
        raise PrivacyError(
            f"{projection.path} was fitted on {overlap} rows of {private.ref.path}:{private.name} "
            "(same source): the public data must not hold private rows"
        )


def _same_split(left: str, right: str) -> bool:
    (left_path, left_split), (right_path, right_split) = parse_ref(left, "public"), parse_ref(right, "public")
    return Path(left_path).resolve() == Path(right_path).resolve() and left_split == right_split


def labelled_public_split(text: str, private: Split) -> Split:
    """A labelled public split for methods that use public labels (AdaDPS): labelled, and none of its rows
    private."""
    public = read_split(text)
    if public.name in ("private", "val"):
        raise PrivacyError(
            f"{public.ref.path}:{public.name} is drawn from the private pool; "
            f"{param('public_labelled')} needs public data"
        )
    if public.labels is None:
        raise UsageError(
            f"{public.ref.path}:{public.name} has no labels; {param('public_labelled')} needs a labelled "
            "public split"
        )
    if public.same_source(private) and (overlap := int(np.isin(public.index, private.index).sum())):
        raise PrivacyError(
            f"{public.ref.path}:{public.name} shares {overlap} rows with {private.ref.path}:"
            f"{private.name}: public labelled data must not hold private rows"
        )
    if overlap := public.rows_sharing_persons(private):
        raise PrivacyError(
            f"{public.ref.path}:{public.name} holds {overlap} rows of persons with rows in "
            f"{private.ref.path}:{private.name}: public labelled data must not hold private persons"
        )
    return public
