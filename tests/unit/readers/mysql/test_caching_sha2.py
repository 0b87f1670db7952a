"""``caching_sha2_password`` (MySQL 8's default authentication plugin) as far as it can be checked here.

MariaDB has no caching_sha2_password plugin and no MySQL server runs where this project is tested, so the
login itself is not exercised. What is checked: PyMySQL (the reader's driver) has what the plugin's two
paths need. Over TLS the full authentication sends the password inside the TLS session; without TLS the
client asks the server for its RSA public key and sends the password XOR the nonce, RSA-OAEP encrypted:
that needs the ``cryptography`` package (a declared dependency), and the server, holding the private key,
must get the password back. The fast path (a cached account) sends the documented SHA-256 scramble.
"""

from __future__ import annotations

import hashlib

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from pymysql import _auth

PASSWORD = b"s3cret-\xc3\xa9"
NONCE = bytes(range(1, 21))  # the 20-byte scramble a server sends in its handshake


def test_rsa_public_key_exchange_gives_the_server_the_password():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    sent = _auth.sha2_rsa_encrypt(PASSWORD, NONCE, pem)
    assert _auth._have_cryptography and PASSWORD not in sent
    plain = key.decrypt(sent, padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None))
    recovered = bytes(b ^ NONCE[i % len(NONCE)] for i, b in enumerate(plain))
    assert recovered == PASSWORD + b"\0"  # what sql/auth/sha2_password.cc compares with the stored hash


def test_fast_path_scramble_is_the_documented_one():
    h1 = hashlib.sha256(PASSWORD).digest()
    h3 = hashlib.sha256(hashlib.sha256(h1).digest() + NONCE).digest()
    assert _auth.scramble_caching_sha2(PASSWORD, NONCE) == bytes(a ^ b for a, b in zip(h1, h3))
