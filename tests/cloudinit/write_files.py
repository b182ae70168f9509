#!/usr/bin/env python3
"""Reads #cloud-config user-data the way cloud-init does (PyYAML safe_load, b64 decoded) and writes each
write_files entry's content to OUTDIR/<path with '/' replaced by '_'>, so a test can compare the bytes a node gets."""
import base64
import pathlib
import sys

import yaml

user_data = yaml.safe_load(pathlib.Path(sys.argv[1]).read_text())
out = pathlib.Path(sys.argv[2])
for entry in user_data["write_files"]:
    content = entry.get("content", "")
    data = base64.b64decode(content) if entry.get("encoding") == "b64" else content.encode()
    (out / entry["path"].replace("/", "_")).write_bytes(data)
    print(entry["path"], entry.get("permissions", ""))
