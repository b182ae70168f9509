#!/usr/bin/env python3
"""Writes the local wheelhouse gpuenv's image system test installs from (no PyPI is reachable there):

  make_wheelhouse.py OUT --torch 2.9.1 --variant cu128 --cuda-line 12.8 --torchvision 0.24.1 --torchaudio 2.9.1
      --pip-wheel pip-24.0-py3-none-any.whl --pip-version 26.2.1 --library libstub.so

- torch, torchvision, torchaudio as <version>+<variant> wheels, as PyTorch's cuXYZ index names them; torch is the
  stand-in package next to this script and, like the real 2.x wheels, requires nvidia-cublas-cu12 and
  nvidia-cudnn-cu12, whose wheels carry `library` (any shared object) under nvidia/<lib>/lib/ with the sonames
  torch loads;
- pip: the distribution's pip wheel re-labelled as the version the Dockerfile pins (the code stays the
  distribution's; the step under test is the pinned `pip install pip==X` resolving from the index).

Wheels follow the binary distribution format (PEP 427): a zip with <name>-<version>.dist-info/{METADATA,WHEEL,RECORD},
RECORD listing every file's urlsafe-base64 SHA-256 and size.
"""

import argparse
import base64
import hashlib
import os
import re
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def write_wheel(out_dir, name, version, files, requires=(), tag="py3-none-any"):
    """files: {archive path: bytes}. Returns the wheel's path."""
    dist = name.replace("-", "_")
    info = "%s-%s.dist-info" % (dist, version)
    metadata = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    metadata += "".join("Requires-Dist: %s\n" % r for r in requires)
    entries = dict(files)
    entries[info + "/METADATA"] = metadata.encode()
    entries[info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: gpuenv-standin\nRoot-Is-Purelib: true\nTag: %s\n" %
                                tag).encode()
    record = [record_line(path, data) for path, data in sorted(entries.items())]
    record.append(info + "/RECORD,,")
    path = os.path.join(out_dir, "%s-%s-%s.whl" % (dist, version, tag))
    entries[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    # Every entry with a fixed time (RECORD last, as wheels have it): the same inputs give the same bytes, so the
    # image test's COPY of the wheelhouse stays a cache hit between runs.
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for archive_path, data in sorted(entries.items(), key=lambda item: (item[0].endswith("/RECORD"), item[0])):
            info_entry = zipfile.ZipInfo(archive_path, date_time=(2026, 1, 1, 0, 0, 0))
            # Shared objects keep their execute bit, as in the real nvidia-* wheels.
            mode = 0o755 if archive_path.endswith((".so", ".so.12", ".so.9")) else 0o644
            info_entry.external_attr = (0o100000 | mode) << 16
            wheel.writestr(info_entry, data, zipfile.ZIP_DEFLATED)
    return path


def relabel_pip(source, version, out_dir):
    """The pip wheel `source` with its version replaced by `version` in the dist-info name and METADATA."""
    with zipfile.ZipFile(source) as wheel:
        names = wheel.namelist()
        old_info = next(n.split("/")[0] for n in names if re.match(r"pip-[^/]+\.dist-info/METADATA$", n))
        files = {}
        for name in names:
            if name.startswith(old_info + "/") and name.split("/")[1] in ("RECORD", "METADATA", "WHEEL"):
                continue
            target = name.replace(old_info, "pip-%s.dist-info" % version, 1)
            files[target] = wheel.read(name)
        metadata = wheel.read(old_info + "/METADATA").decode()
    metadata = re.sub(r"(?m)^Version: .*$", "Version: " + version, metadata)
    requires = re.findall(r"(?m)^Requires-Dist: (.*)$", metadata)
    return write_wheel(out_dir, "pip", version, files, requires)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    for option in ("torch", "variant", "cuda-line", "torchvision", "torchaudio", "pip-wheel", "pip-version",
                   "library"):
        parser.add_argument("--" + option, required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(HERE, "torch", "__init__.py")) as f:
        torch_source = f.read().replace("@TORCH_VERSION@", args.torch + "+" + args.variant)
        torch_source = torch_source.replace("@CUDA_LINE@", args.cuda_line)
    with open(args.library, "rb") as f:
        library = f.read()
    local = "+" + args.variant
    write_wheel(args.out, "nvidia-cublas-cu12", "12.8.4.1", {"nvidia/cublas/lib/libcublas.so.12": library})
    write_wheel(args.out, "nvidia-cudnn-cu12", "9.10.2.21", {"nvidia/cudnn/lib/libcudnn.so.9": library})
    write_wheel(args.out, "torch", args.torch + local, {"torch/__init__.py": torch_source.encode()},
                ["nvidia-cublas-cu12==12.8.4.1", "nvidia-cudnn-cu12==9.10.2.21"])
    for name, version in (("torchvision", args.torchvision), ("torchaudio", args.torchaudio)):
        write_wheel(args.out, name, version + local, {name + "/__init__.py": b"import torch\n"},
                    ["torch==" + args.torch])
    relabel_pip(args.pip_wheel, args.pip_version, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
