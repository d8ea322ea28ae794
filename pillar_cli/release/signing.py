"""Signing a file a user ships, and checking its signature: the OpenSSF model-signing library, offline, with
an elliptic-curve key pair (PEM); the signature is a sigstore bundle beside the file (FILE.sig), or inside an
hf folder (FOLDER/model.sig, which the signature leaves out of what it covers), so that uploading the folder
keeps it. pillar's hashes prove a file is intact against accidents, but anyone can recompute them after an
edit; a signature proves that the holder of the key wrote the file as it is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pillar_cli.artifacts.files import plain_permissions
from pillar_cli.artifacts.outputs import put_in_place
from pillar_cli.errors import ArtifactError, UsageError

SUFFIX = ".sig"
SIGNING_CURVES = ("secp256r1", "secp384r1", "secp521r1")  # NIST P-256, P-384, P-521: what model-signing takes


def signature_path(path: Path, folder: bool | None = None) -> Path:
    """Where a file's signature lies: beside it, FILE.sig; a folder's inside it, FOLDER/model.sig (`folder`:
    whether `path` is one, or will be; None: whether it is one now)."""
    from pillar_cli.release.exported import HF_SIGNATURE

    folder = Path(path).is_dir() if folder is None else folder
    return Path(path) / HF_SIGNATURE if folder else Path(f"{path}{SUFFIX}")


def _covering(config, path: Path):
    """A model-signing config that hashes `path` less its own signature and that signature's scratch file,
    named relative to the folder (as model-signing reads an ignored path): so that the folder signs and
    verifies from any working directory, by a relative or an absolute path, and after it is moved."""
    from model_signing import hashing

    from pillar_cli.release.exported import HF_SIGNATURE

    if not Path(path).is_dir():
        return config
    return config.set_hashing_config(
        hashing.Config().set_ignored_paths(paths=[HF_SIGNATURE, f".{HF_SIGNATURE}.partial"])
    )


def check_signing_key(key: Path) -> None:
    """Refuse, before anything is written, a key that cannot sign: missing, not PEM, not an elliptic-curve
    private key (the kind model-signing's key signer takes), or protected by a password."""
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        loaded = load_pem_private_key(key.read_bytes(), password=None)
    except OSError as err:
        raise UsageError(f"cannot read the signing key {key}: {err.strerror}") from None
    except (TypeError, ValueError):
        raise UsageError(
            f"{key} is not an unencrypted PEM private key",
            hint="make one with: openssl ecparam -name prime256v1 -genkey -noout -out key.pem",
        ) from None
    if not isinstance(loaded, ec.EllipticCurvePrivateKey):
        raise UsageError(
            f"{key} is not an elliptic-curve private key (model-signing signs with EC keys)",
            hint="make one with: openssl ecparam -name prime256v1 -genkey -noout -out key.pem",
        )
    if loaded.curve.name not in SIGNING_CURVES:
        raise UsageError(
            f"{key} is a key on the curve {loaded.curve.name}; model-signing signs with "
            f"{', '.join(SIGNING_CURVES)} keys only",
            hint="make one with: openssl ecparam -name prime256v1 -genkey -noout -out key.pem",
        )


def sign_file(path: Path, key: Path) -> Path:
    """Sign `path` with the private key; the bundle is written next to it (atomically) and its path
    returned."""
    import model_signing

    target = signature_path(path)
    partial = target.with_name(f".{target.name}.partial")
    try:
        _covering(model_signing.signing.Config().use_elliptic_key_signer(private_key=key), path).sign(
            path, partial
        )
        plain_permissions(partial)
        put_in_place(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


@dataclass(frozen=True)
class Trust:
    """Whether a file is signed and whether its signature was checked, and that in one line."""

    signed: bool
    verified: bool
    line: str


def trust_of(path: Path, public_key: Path | None = None) -> Trust:
    """What proves who wrote `path`: its signature checked with `public_key` (a signature that does not hold
    is one line), a signature nobody checked, or none."""
    bundle = signature_path(path)
    if public_key is not None:
        if (problem := signature_problem(path, public_key)) is not None:
            raise ArtifactError(f"{path}: {problem}", hint="use the file only from a signer you trust")
        return Trust(True, True, f"{path}: signed and verified ({bundle} holds for {public_key})")
    if bundle.exists():
        return Trust(
            True,
            False,
            f"{path}: signed ({bundle}) but not verified: pass --key with the signer's public "
            "key to know who wrote it",
        )
    return Trust(
        False,
        False,
        f"{path}: not signed: nothing proves who wrote it (its hashes and ε are checked, but "
        "anyone who edits it can recompute them)",
    )


def signature_problem(path: Path, public_key: Path, signature: Path | None = None) -> str | None:
    """Why the signature of `path` does not hold for `public_key` (missing, malformed, made by another key, or
    over other bytes); None when it holds."""
    import model_signing

    bundle = signature or signature_path(path)
    if not bundle.exists():
        return f"no signature at {bundle}"
    try:
        _covering(
            model_signing.verifying.Config().use_elliptic_key_verifier(public_key=public_key), path
        ).verify(path, bundle)
    except FileNotFoundError as err:
        raise ArtifactError(f"cannot read {err.filename}") from None
    except Exception as err:  # model-signing and sigstore raise their own kinds on any mismatch
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        return f"the signature {bundle} does not hold for {public_key} ({detail[:100]})"
    return None
