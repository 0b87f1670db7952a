"""`cdc decrypt --key-file FILE [VALUE ...]`: the clear text of values ``mask: encrypt`` wrote.

For key holders: each VALUE (or each line of stdin when none is given) is decrypted under the AES-256 key
in FILE (the source's ``transforms.encryption_key_file``) and printed, one per line. A value that does not
decrypt is an error on stderr naming its place (never the key); the exit status is then 1. The library
function is :func:`cdc.transforms.decrypt` (with :func:`cdc.transforms.read_encryption_key`).
"""

from __future__ import annotations

import argparse
import sys

from cdc.transforms.errors import DecryptError
from cdc.transforms.masks import decrypt, read_encryption_key


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--key-file", required=True, help="file holding the AES-256 key as 64 hex characters "
                        "(the source's transforms.encryption_key_file)")
    parser.add_argument("values", nargs="*", help="encrypted values ('aesgcm1:...'); none: one per line of stdin")


def main(args: argparse.Namespace) -> int:
    key = read_encryption_key(args.key_file)
    values = args.values or [line.strip() for line in sys.stdin if line.strip()]
    status = 0
    for i, value in enumerate(values, 1):
        try:
            print(decrypt(value, key))
        except DecryptError as exc:
            print(f"cdc decrypt: value {i}: {exc}", file=sys.stderr)
            status = 1
    return status
