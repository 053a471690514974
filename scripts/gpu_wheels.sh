#!/usr/bin/env bash
# Makes .whl/, the wheels that scripts/gpu_suite.sh installs on the GPU machine, from scripts/gpu_wheels.txt in one step:
# downloads them for Python 3.12 manylinux x86_64 (no dependencies: the list names each one), slims the three large ones
# the list marks "slim" (rebuilt as valid wheels, their RECORD rewritten with the new hashes), and packs them all,
# stored uncompressed, into one xz archive, .whl/wheels.tar.xz (9.0 MB, where the downloaded wheels are 30.5 MB and the
# slimmed ones, zip-compressed, about 14 MB): the working tree that travels to the machine (tracked files, untracked
# files git does not ignore, and .whl) must stay under 64 MiB. Run it from anywhere, on a machine with pip and the
# internet; it replaces .whl/ and keeps it out of git (.git/info/exclude). It prints each wheel's size and the totals.
#
#   scripts/gpu_wheels.sh            # then, with a GPU lent: the device tool's run, carry [".whl"] (see gpu_suite.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

LIST=scripts/gpu_wheels.txt
DEST=.whl
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)

exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qxF "/$DEST/" "$exclude" 2>/dev/null || echo "/$DEST/" >>"$exclude"
command -v strip >/dev/null || { echo "gpu_wheels.sh: needs strip (binutils)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The requirement lines: NAME==VERSION, then an optional "# pure" or "# slim: ..." comment
awk '$1 ~ /==/ && !/# pure/ {print $1}' "$LIST" >"$work/platform.txt"
awk '$1 ~ /==/ && /# pure/ {print $1}' "$LIST" >"$work/pure.txt"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${PLATFORMS[@]}" \
    -d "$work/download" -r "$work/platform.txt"
if [ -s "$work/pure.txt" ]; then
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation py --abi none \
        --platform any -d "$work/download" -r "$work/pure.txt"
fi
expected=$(cat "$work/platform.txt" "$work/pure.txt" | wc -l)
got=$(find "$work/download" -name '*.whl' | wc -l)
[ "$got" -eq "$expected" ] || { echo "gpu_wheels.sh: $got wheels for $expected lines" >&2; exit 1; }

rm -rf "$DEST"
mkdir -p "$DEST" "$work/wheels"
python3 - "$work/download" "$work/wheels" "$DEST/wheels.tar.xz" <<'PYTHON'
"""Each wheel stored uncompressed (xz compresses the archive), the "slim" ones without the files below; the archive."""
import base64
import hashlib
import lzma
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile

# The distribution's name as in the wheel's file name, lower case: (files left out, strip debug info from .so files)
SLIM = {
    # docs, C headers, code generation, system identification, USD export, MuJoCo's own tests, the GUI viewer
    "mujoco_core": (
        r"mujoco/(doc|include|introspect|sysid|usd|testdata)/|mujoco/[^/]*_test\.py$|mujoco/_simulate\.",
        False,
    ),
    "box2d": (r"Box2D/(examples|tests)/", True),
    # the modules needing a library other than SDL2 (fonts, sound, image formats, MIDI, camera) and those libraries;
    # pygame's __init__ imports them in try/except and leaves a MissingModule in their place
    "pygame_ce": (
        r"pygame/(docs|examples|tests)/|pygame/(font|_freetype|mixer|mixer_music|imageext|pypm|_camera)\.cpython"
        r"|pygame/_sdl2/mixer\.cpython|pygame_ce\.libs/(?!libSDL2-2-)",
        False,
    ),
}


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def copy(source: str, target: str, drop: str | None, strip: bool) -> None:
    with zipfile.ZipFile(source) as wheel, zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as out:
        infos = [info for info in wheel.infolist() if not (drop and re.search(drop, info.filename))]
        record = next(info for info in infos if re.fullmatch(r"[^/]+\.dist-info/RECORD", info.filename))
        lines = []
        for info in infos:
            if info is record:
                continue
            data = wheel.read(info)
            if strip and info.filename.endswith(".so"):
                with tempfile.NamedTemporaryFile(suffix=".so", delete=False) as file:
                    file.write(data)
                subprocess.run(["strip", "--strip-debug", file.name], check=True)
                with open(file.name, "rb") as file:
                    data = file.read()
                os.unlink(file.name)
            out.writestr(info, data, zipfile.ZIP_STORED)
            if not info.is_dir():
                lines.append(f"{info.filename},{digest(data)},{len(data)}")
        if drop or strip:  # RECORD lists what the wheel now holds, with the hashes of the stripped files
            text = "\n".join([*lines, f"{record.filename},,"]) + "\n"
        else:
            text = wheel.read(record).decode()
        out.writestr(record, text, zipfile.ZIP_STORED)


def reset(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """The same archive from the same wheels: no dates or owners."""
    info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode = 0, 0, 0, "", "", 0o644
    return info


source_dir, work_dir, archive = sys.argv[1:]
names = sorted(os.listdir(source_dir))
print(f"{'downloaded':>10} {'packed':>10}  wheel (packed: alone, xz)")
for name in names:
    drop, strip = SLIM.get(name.split("-")[0].lower(), (None, False))
    copy(os.path.join(source_dir, name), os.path.join(work_dir, name), drop, strip)
    with open(os.path.join(work_dir, name), "rb") as file:
        packed = len(lzma.compress(file.read(), preset=9))
    print(f"{os.path.getsize(os.path.join(source_dir, name)):>10} {packed:>10}  {name}")
# Python's lzma, as gpu_suite.sh reads it there with tarfile: the GPU machine may have no xz program
with tarfile.open(archive, "w:xz", preset=9) as tar:
    for name in names:
        tar.add(os.path.join(work_dir, name), arcname=name, filter=reset)
PYTHON

tree=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s}')
untracked=$(git ls-files -z -o --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
packed=$(stat -c %s "$DEST/wheels.tar.xz")
echo "downloaded $(cat "$work"/download/*.whl | wc -c) bytes; $DEST/wheels.tar.xz $packed bytes"
echo "tracked $tree + untracked $untracked + $DEST $packed = $((tree + untracked + packed)) bytes of 67108864 (64 MiB)"
# The device tool refused a tree of 52 MiB in bytes that took 74 MiB on disk, and took one of 58 MiB on disk: its limit
# reads more than the bytes, as the disk's blocks do (benchmarks/gpu/README.md says how a run got under it)
disk=$( (git ls-files -z; git ls-files -z -o --exclude-standard; printf '%s\0' "$DEST/wheels.tar.xz") |
    du -c -B1 --files0-from=- 2>/dev/null | tail -n 1 | cut -f 1)
echo "on disk: $disk bytes of 67108864"
[ "$disk" -le 67108864 ] || echo "gpu_wheels.sh: over 64 MiB on disk: the device tool may refuse the tree (benchmarks/gpu/README.md)"
