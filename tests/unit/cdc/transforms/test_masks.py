"""Every mask on its own: values, NULL, determinism, the key files, encrypt/decrypt round trip."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from cdc.transforms import masks
from cdc.transforms.errors import DecryptError, KeyFileError

KEY = b"0123456789abcdef-hash-key"
AES = bytes(range(32))


def test_hash_is_hmac_sha256_hex_and_deterministic():
    h = masks.hash_mask(KEY)
    want = hmac.new(KEY, b"PII-SECRET-123@example.com", hashlib.sha256).hexdigest()
    assert h("PII-SECRET-123@example.com") == want == h("PII-SECRET-123@example.com")
    assert len(want) == 64 and h("other") != want
    assert h(42) == hmac.new(KEY, b"42", hashlib.sha256).hexdigest()  # an integer hashes as its digits
    assert h(None) is None
    assert masks.hash_mask(KEY + b"x")("a") != h("a")  # another key, another value


def test_truncate_keep_last_replace_null():
    assert masks.truncate_mask(3)("Alexandra") == "Ale" and masks.truncate_mask(3)("Al") == "Al"
    assert masks.truncate_mask(0)("x") == ""
    assert masks.keep_last_mask(4)("4111111111111234") == "************1234"
    assert masks.keep_last_mask(4)("12") == "12" and masks.keep_last_mask(0)("ab") == "**"
    assert masks.replace_mask("(removed)")("secret") == "(removed)"
    assert masks.null_mask("secret") is None
    for m in (masks.truncate_mask(3), masks.keep_last_mask(2), masks.replace_mask("x")):
        assert m(None) is None  # NULL stays NULL


def test_a_value_with_no_text_is_refused():
    with pytest.raises(TypeError):
        masks.truncate_mask(3)(1.5)


def test_encrypt_round_trip_is_not_deterministic_and_needs_the_key():
    enc = masks.encrypt_mask(AES)
    a, b = enc("PII-SECRET-123@example.com"), enc("PII-SECRET-123@example.com")
    assert a != b and a.startswith(masks.ENCRYPTED_PREFIX) and "PII" not in a
    assert masks.decrypt(a, AES) == masks.decrypt(b, AES) == "PII-SECRET-123@example.com"
    assert enc(None) is None
    with pytest.raises(DecryptError, match="does not decrypt under this key"):
        masks.decrypt(a, bytes(32))
    with pytest.raises(DecryptError, match="not an encrypted value"):
        masks.decrypt("plain", AES)
    with pytest.raises(DecryptError, match="base64"):
        masks.decrypt(masks.ENCRYPTED_PREFIX + "!!", AES)


def test_key_files(tmp_path):
    hk = tmp_path / "hash.key"
    hk.write_bytes(KEY + b"\n")
    assert masks.read_hash_key(str(hk)) == KEY
    hk.write_bytes(b"short")
    with pytest.raises(KeyFileError, match="hash_key_file .*at least 16") as err:
        masks.read_hash_key(str(hk))
    assert "short" not in str(err.value)  # the key is never shown
    ak = tmp_path / "aes.key"
    ak.write_text(AES.hex() + "\n")
    assert masks.read_encryption_key(str(ak)) == AES
    ak.write_text("zz" * 32)
    with pytest.raises(KeyFileError, match="64 hex characters"):
        masks.read_encryption_key(str(ak))
    with pytest.raises(KeyFileError, match="cannot read the key file"):
        masks.read_encryption_key(str(tmp_path / "missing"))
