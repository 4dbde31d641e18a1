"""The algorithm catalog: names, aliases, sizes, and which buffer sizes each mode takes."""

import pytest

from pytest_qcrypto.algorithms import catalog


@pytest.mark.parametrize("typed, canonical", [
    ("sha256", "sha256"), ("SHA256", "sha256"), ("sha-256", "sha256"), ("SHA_256", "sha256"),
    ("sha512/224", "sha512-224"), ("3des", "des-ede3-cbc"), ("AES128", "aes-128-cbc"),
    ("aes-256-gcm", "aes-256-gcm"), ("ChaCha20-Poly1305", "chacha20-poly1305"),
    ("blake2b", "blake2b512"),
])
def test_lookup_accepts_aliases_in_any_case(typed, canonical):
    assert catalog.lookup(typed).name == canonical


def test_lookup_unknown_is_none():
    assert catalog.lookup("sha265") is None


def test_suggest_names_the_nearest_of_the_right_kind():
    assert catalog.suggest("sha265", (catalog.DIGEST,))[0] == "sha256"
    assert all(catalog.lookup(n).kind != catalog.DIGEST
               for n in catalog.suggest("aes-128-cbd", (catalog.CIPHER, catalog.AEAD)))


def test_every_issue_algorithm_is_in_the_catalog():
    wanted = ("md5 sha1 sha224 sha256 sha384 sha512 sha512-224 sha512-256 sha3-224 sha3-256 "
              "sha3-384 sha3-512 blake2b512 blake2s256 sm3 aes-128-cbc aes-192-cbc aes-256-cbc "
              "aes-128-ctr aes-192-ctr aes-256-ctr aes-128-ecb aes-256-ecb aes-128-gcm "
              "aes-256-gcm aes-128-xts aes-256-xts chacha20 chacha20-poly1305 des-ede3-cbc")
    # issue 13: FreeBSD cryptotest's ciphers and its HMACs, CMAC and Poly1305
    wanted += (" des-cbc bf-cbc cast5-cbc hmac-md5 hmac-sha1 hmac-sha256 hmac-sha384 "
               "hmac-sha512 cmac-aes-128 poly1305")
    # issue 15: signatures, key agreement, KEMs, RSA encryption and KDFs (parameters in the name)
    wanted += (" rsa2048 rsa3072 rsa4096 rsa2048-pkcs1 ecdsa-p256 ecdsa-p384 ed25519 ed448 "
               "ml-dsa-44 ml-dsa-65 ml-dsa-87 x25519 x448 ecdh-p256 ml-kem-768 ml-kem-1024 "
               "rsa2048-oaep pbkdf2-sha256-i600000 scrypt-n16384-r8-p1 argon2id-m65536-t3-p4 "
               "bcrypt-c12 hkdf-sha256")
    wanted += " ml-kem-512"  # issue 26: PyCryptodome has it
    assert set(wanted.split()) == set(catalog.names())


@pytest.mark.parametrize("name, key, iv, tag", [
    ("aes-128-cbc", 16, 16, 0), ("aes-256-xts", 64, 16, 0), ("aes-128-xts", 32, 16, 0),
    ("aes-256-gcm", 32, 12, 16), ("chacha20", 32, 16, 0), ("chacha20-poly1305", 32, 12, 16),
    ("des-ede3-cbc", 24, 8, 0), ("aes-128-ecb", 16, 0, 0),
    ("des-cbc", 8, 8, 0), ("bf-cbc", 16, 8, 0), ("cast5-cbc", 16, 8, 0),
    ("hmac-sha256", 32, 0, 32), ("hmac-sha384", 48, 0, 48), ("cmac-aes-128", 16, 0, 16),
    ("poly1305", 32, 0, 16),
])
def test_key_iv_and_tag_sizes(name, key, iv, tag):
    alg = catalog.lookup(name)
    assert (alg.key_size, alg.iv_size, alg.tag_size) == (key, iv, tag)


@pytest.mark.parametrize("name, size, ok", [
    ("aes-128-cbc", 16, True), ("aes-128-cbc", 17, False), ("aes-128-ecb", 8, False),
    ("des-ede3-cbc", 8, True), ("des-ede3-cbc", 12, False), ("aes-128-ctr", 17, True),
    ("aes-128-gcm", 1, True), ("chacha20", 3, True), ("aes-128-xts", 15, False),
    ("aes-128-xts", 17, True), ("sha256", 1, True),
])
def test_size_rules(name, size, ok):
    assert (catalog.lookup(name).size_problem(size) is None) == ok


def test_size_problem_names_cipher_block_and_size():
    msg = catalog.lookup("aes-128-cbc").size_problem(100)
    assert "aes-128-cbc" in msg and "16-byte block" in msg and "100" in msg
