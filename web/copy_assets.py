"""Copy the pinned browser assets from ``web/node_modules`` to where they are served.

Two sets, each a manifest and a directory: GraphiQL's (``gateway/static/graphiql.manifest.json``
→ ``gateway/static/graphiql/``, served by the gateway) and the manual's (``web/docs.manifest.json``
→ ``docs/assets/vendor/``: Mermaid, so the site draws its diagrams without a CDN).
Run by ``make assets`` after ``npm ci`` (standard library only: it runs before the virtualenv
exists). Every file named in a manifest is copied from the npm package the manifest names, after
checking that the installed package has the pinned version and that the file's SHA-384 equals
the manifest's. Any mismatch fails with exit status 1 and leaves the previously installed assets
untouched: the files are staged in a temporary directory and swapped in only when all of them
verified.

    python3 web/copy_assets.py                    # copy and verify (what `make assets` runs)
    python3 web/copy_assets.py --set graphiql     # one set only (the image needs no manual)
    python3 web/copy_assets.py --check            # verify the installed copy only
    python3 web/copy_assets.py --update-manifest  # after a deliberate version bump: re-hash
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODE_MODULES = ROOT / "web" / "node_modules"
#: Each set by its name: its label, its manifest, the directory its files are installed in.
SETS = {
    "graphiql": ("GraphiQL", ROOT / "gateway" / "static" / "graphiql.manifest.json",
                 ROOT / "gateway" / "static" / "graphiql"),
    "docs": ("the manual's", ROOT / "web" / "docs.manifest.json", ROOT / "docs" / "assets" / "vendor"),
}


def sri_sha384(data: bytes) -> str:
    """The Subresource Integrity string of ``data``: ``sha384-<base64 digest>``."""
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode("ascii")


def load_manifest(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def installed_version(package: str) -> str | None:
    meta = NODE_MODULES / package / "package.json"
    return json.loads(meta.read_text(encoding="utf-8")).get("version") if meta.is_file() else None


def check_sources(manifest: dict) -> list[str]:
    """Problems with the npm packages the manifest names (missing, or another version)."""
    problems = []
    for name, entry in manifest["files"].items():
        package, _, version = entry["package"].rpartition("@")
        found = installed_version(package)
        if found is None:
            problems.append(
                f"{name}: npm package {package} is not installed in web/node_modules (run `npm ci` in web/)")
        elif found != version:
            problems.append(f"{name}: web/node_modules has {package}@{found}, the manifest pins {version}")
        elif not (NODE_MODULES / entry["source"]).is_file():
            problems.append(f"{name}: {entry['source']} is missing from web/node_modules")
    return problems


def verify_dir(directory: Path, manifest: dict) -> list[str]:
    """Problems with the files in ``directory`` against the manifest (missing, extra, wrong hash)."""
    problems = []
    for name, entry in manifest["files"].items():
        path = directory / name
        if not path.is_file():
            problems.append(f"{name}: missing")
            continue
        actual = sri_sha384(path.read_bytes())
        if actual != entry["integrity"]:
            problems.append(f"{name}: integrity mismatch: manifest {entry['integrity']}, file {actual}")
    extra = sorted(p.name for p in directory.iterdir() if p.name not in manifest["files"]) if directory.is_dir() else []
    problems.extend(f"{name}: not listed in the manifest" for name in extra)
    return problems


def install(label: str, path: Path, target: Path, manifest: dict) -> int:
    problems = check_sources(manifest)
    if problems:
        return fail(f"cannot install {label} assets", problems)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for name, entry in manifest["files"].items():
            shutil.copyfile(NODE_MODULES / entry["source"], staging / name)
        problems = verify_dir(staging, manifest)
        if problems:
            return fail(f"{label} assets do not match {os.path.relpath(path, ROOT)}", problems)
        staging.chmod(0o755)  # mkdtemp creates it private; the server may run as another user
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    total = sum((target / name).stat().st_size for name in manifest["files"])
    print(f"{label} assets: {len(manifest['files'])} files ({total / 1e6:.1f} MB) verified (sha384) "
          f"and installed in {os.path.relpath(target, ROOT)}/")
    return 0


def update_manifest(path: Path, manifest: dict) -> int:
    problems = []
    for name, entry in manifest["files"].items():
        package = entry["package"].rpartition("@")[0]
        version = installed_version(package)
        if version is None or not (NODE_MODULES / entry["source"]).is_file():
            problems.append(f"{name}: {entry['source']} is not installed in web/node_modules (run `npm ci` in web/)")
            continue
        entry["package"] = f"{package}@{version}"
        entry["integrity"] = sri_sha384((NODE_MODULES / entry["source"]).read_bytes())
    if problems:
        return fail("cannot re-hash", problems)
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    print(f"rewrote {os.path.relpath(path, ROOT)}; review the diff, then run `make assets`")
    return 0


def fail(title: str, problems: list[str]) -> int:
    print(f"error: {title}:", file=sys.stderr)
    for p in problems:
        print(f"  {p}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="verify the installed copies against their manifests")
    mode.add_argument("--update-manifest", action="store_true", help="re-hash the files of the installed packages")
    parser.add_argument("--set", choices=sorted(SETS), action="append",
                        help="only this set (repeatable; default: every set)")
    args = parser.parse_args(argv)
    status = 0
    for label, path, target in (SETS[name] for name in args.set or SETS):
        manifest = load_manifest(path)
        if args.check:
            problems = verify_dir(target, manifest)
            status |= fail(f"installed {label} assets do not verify", problems) if problems else 0
        elif args.update_manifest:
            status |= update_manifest(path, manifest)
        else:
            status |= install(label, path, target, manifest)
    return status


if __name__ == "__main__":
    sys.exit(main())
