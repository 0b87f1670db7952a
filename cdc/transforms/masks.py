"""The masks: pure functions from one stream value to its shaped value.

A mask sees the value the stream would carry (cdc/schema/values.py: text for strings, dates, decimals;
int for integers) and returns the value the stream carries instead. NULL stays NULL under every mask
(``null`` makes every value NULL): the NULL-ness of a value is not a secret these masks hide.

The text a mask works on is :func:`text_of` the value: the string itself, or the decimal digits of an
integer. ``cdc compare`` renders the same text in the source database (cdc.compare.transformed), so a
masked target is proven equal to its source.

- ``hash``: HMAC-SHA256 of the UTF-8 text under the source's hash key, 64 lower-case hex characters.
  Deterministic: equal values hash equal (joins, updates by key and compare work on the hashed value);
  without the key nobody can test a guess.
- ``encrypt``: AES-256-GCM of the UTF-8 text under the encryption key, a fresh 96-bit nonce per value,
  written ``aesgcm1:`` + base64(nonce + ciphertext + tag). Not deterministic (the same value encrypts
  differently each time): never on a key column. :func:`decrypt` (and `cdc decrypt`) reverse it.
- ``truncate``: the first ``length`` characters; ``keep_last``: every character but the last ``length``
  replaced by ``*`` (``****1234``); ``replace``: the fixed ``value``; ``null``: NULL.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cdc.transforms.errors import DecryptError, KeyFileError

Mask = Callable[[Any], Any]

ENCRYPTED_PREFIX = "aesgcm1:"
MIN_HASH_KEY_BYTES = 16
AES_KEY_BYTES = 32


def text_of(value: Any) -> str:
    """The text a mask works on: a string itself, an integer's decimal digits (bool: '1'/'0')."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    raise TypeError(f"a {type(value).__name__} value has no mask text")


def read_hash_key(path: str) -> bytes:
    """The HMAC key: the file's bytes without trailing whitespace, at least 16 bytes."""
    key = _read(path, "hash_key_file").rstrip()
    if len(key) < MIN_HASH_KEY_BYTES:
        raise KeyFileError(f"hash_key_file {path}: the key holds {len(key)} bytes, at least "
                           f"{MIN_HASH_KEY_BYTES} are needed (e.g. `head -c 32 /dev/urandom | base64 > {path}`)",
                           path=path)
    return key


def read_encryption_key(path: str) -> bytes:
    """The AES-256 key: 64 hex characters in the file (whitespace around them ignored)."""
    text = _read(path, "encryption_key_file").strip()
    try:
        key = bytes.fromhex(text.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        key = b""
    if len(key) != AES_KEY_BYTES:
        raise KeyFileError(f"encryption_key_file {path}: the file must hold {AES_KEY_BYTES * 2} hex characters "
                           f"(an AES-256 key; e.g. `openssl rand -hex 32 > {path}`)", path=path)
    return key


def _read(path: str, key_name: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise KeyFileError(f"{key_name} {path}: cannot read the key file: {exc.strerror or exc}", path=path) from None


def hash_mask(key: bytes) -> Mask:
    """HMAC-SHA256 (RFC 2104) of the value's text, as hex: the same digest as ``hmac.new(key, text, sha256)``,
    with the two keyed SHA-256 states made once and copied per value instead of re-deriving the key pads on
    every call (well over a third of the cost; the native rows path hashes on every row)."""
    block = hashlib.sha256().block_size
    if len(key) > block:
        key = hashlib.sha256(key).digest()
    key = key.ljust(block, b"\0")
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in key))
    outer = hashlib.sha256(bytes(b ^ 0x5C for b in key))

    def mask(value: Any) -> Any:
        if value is None:
            return None
        h = inner.copy()
        h.update(text_of(value).encode())
        o = outer.copy()
        o.update(h.digest())
        return o.hexdigest()
    return mask


def encrypt_mask(key: bytes) -> Mask:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = AESGCM(key)

    def mask(value: Any) -> Any:
        if value is None:
            return None
        nonce = os.urandom(12)
        sealed = aead.encrypt(nonce, text_of(value).encode(), None)
        return ENCRYPTED_PREFIX + base64.b64encode(nonce + sealed).decode("ascii")
    return mask


def decrypt(value: str, key: bytes) -> str:
    """The clear text of a value ``encrypt`` wrote under ``key``. DecryptError names what is wrong, never the key."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if not isinstance(value, str) or not value.startswith(ENCRYPTED_PREFIX):
        raise DecryptError(f"not an encrypted value (it does not start with {ENCRYPTED_PREFIX!r})")
    try:
        raw = base64.b64decode(value[len(ENCRYPTED_PREFIX):], validate=True)
    except ValueError:
        raise DecryptError("an encrypted value whose base64 is damaged") from None
    if len(raw) < 12 + 16:
        raise DecryptError("an encrypted value too short to hold a nonce and a tag")
    try:
        return AESGCM(key).decrypt(raw[:12], raw[12:], None).decode()
    except InvalidTag:
        raise DecryptError("the value does not decrypt under this key (another key, or the value was altered)") \
            from None


def truncate_mask(length: int) -> Mask:
    def mask(value: Any) -> Any:
        return None if value is None else text_of(value)[:length]
    return mask


def keep_last_mask(length: int) -> Mask:
    def mask(value: Any) -> Any:
        if value is None:
            return None
        text = text_of(value)
        hidden = max(len(text) - length, 0)
        return "*" * hidden + text[hidden:]
    return mask


def replace_mask(replacement: str) -> Mask:
    def mask(value: Any) -> Any:
        return None if value is None else replacement
    return mask


def null_mask(value: Any) -> Any:
    return None
