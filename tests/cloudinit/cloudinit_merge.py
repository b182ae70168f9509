"""The cloud-config cloud-init builds from a multi-part user-data file, printed as YAML.

For tests/cloudinit/cloudinit_merge_test.cpp: cloud-init's own code does the work, as in its init stage
(cloudinit/stages.py Init._consume_userdata): UserDataProcessor.process splits the MIME parts
(cloudinit/user_data.py) and CloudConfigPartHandler merges the text/cloud-config parts in order with each part's
merge_how (cloudinit/handlers/cloud_config.py, cloudinit/mergers). Only the output file is ours: a temporary path in
place of the instance's cloud-config.txt.

Usage: /usr/bin/python3 cloudinit_merge.py USER_DATA_FILE
"""

import os
import sys
import tempfile

from cloudinit import helpers, user_data
from cloudinit.handlers import CONTENT_END, CONTENT_START
from cloudinit.handlers.cloud_config import CloudConfigPartHandler


def main():
    with open(sys.argv[1], "rb") as f:
        blob = f.read()
    with tempfile.TemporaryDirectory() as work:
        paths = helpers.Paths({"cloud_dir": work, "run_dir": work})
        message = user_data.UserDataProcessor(paths).process(blob)
        handler = CloudConfigPartHandler(paths)
        handler.cloud_fn = os.path.join(work, "cloud-config.txt")
        handler.handle_part(None, CONTENT_START, None, None, None, None)
        for part in message.walk():
            if part.get_content_maintype() == "multipart":
                continue
            if part.get_content_type() != "text/cloud-config":
                continue
            payload = part.get_payload(decode=True).decode()
            handler.handle_part(None, part.get_content_type(), part.get_filename(), payload, None, dict(part.items()))
        handler.handle_part(None, CONTENT_END, None, None, None, None)
        with open(handler.cloud_fn) as f:
            sys.stdout.write(f.read())


main()
