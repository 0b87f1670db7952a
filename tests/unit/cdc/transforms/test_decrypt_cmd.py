"""`cdc decrypt`: prints the clear text for the key holder; a wrong value is an error naming its place."""

from __future__ import annotations

from cdc.cli import main
from cdc.transforms.masks import encrypt_mask


def test_cdc_decrypt(tmp_path, capsys):
    (tmp_path / "a").write_text("ef" * 32)
    sealed = encrypt_mask(bytes.fromhex("ef" * 32))("PII-SECRET-123@example.com")
    assert main(["decrypt", "--key-file", str(tmp_path / "a"), sealed]) == 0
    assert capsys.readouterr().out == "PII-SECRET-123@example.com\n"
    assert main(["decrypt", "--key-file", str(tmp_path / "a"), sealed, "plain"]) == 1
    assert "value 2: not an encrypted value" in capsys.readouterr().err
