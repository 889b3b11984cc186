import pytest

from archive_pipelines.blobstore.keys import blob_key, hash_from_key, key_prefix

pytestmark = pytest.mark.unit

SHA = "ab" + "cd" + "0123456789abcdef" * 3 + "0123456789ab"


def test_fixture_hash_is_well_formed() -> None:
    assert len(SHA) == 64


@pytest.mark.parametrize(("codec", "key"), [
    ("raw", f"sha256/ab/cd/{SHA}"),
    ("zstd", f"sha256/ab/cd/{SHA}.zst"),
])
def test_key_layout(codec: str, key: str) -> None:
    assert blob_key(SHA, codec) == key  # type: ignore[arg-type]
    assert hash_from_key(key, codec) == SHA  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [
    "", "abc", SHA.upper(), SHA[:-1], SHA + "0", SHA[:-1] + "g", f" {SHA[1:]}", f"{SHA[:-1]}\n",
])
def test_key_rejects_a_malformed_hash(bad: str) -> None:
    with pytest.raises(ValueError, match="sha256"):
        blob_key(bad, "raw")


@pytest.mark.parametrize(("key", "codec"), [
    (f"sha256/ab/cd/{SHA}.zst", "raw"),  # another codec's object
    (f"sha256/ab/cd/{SHA}", "zstd"),
    (f"sha256/ab/ce/{SHA}", "raw"),  # in the wrong directory
    (f"sha256/ab/cd/.{SHA[:16]}.0011223344556677.tmp", "raw"),  # a temp file
    (f"x/sha256/ab/cd/{SHA}", "raw"),
])
def test_foreign_keys_name_no_hash(key: str, codec: str) -> None:
    assert hash_from_key(key, codec) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(("prefix", "expected"), [
    ("", "sha256/"),
    ("a", "sha256/a"),
    ("ab", "sha256/ab"),
    ("abc", "sha256/ab/c"),
    ("abcd", "sha256/ab/cd"),
    ("abcd0", "sha256/ab/cd/abcd0"),
])
def test_key_prefix(prefix: str, expected: str) -> None:
    assert key_prefix(prefix) == expected
    assert blob_key(SHA, "raw").startswith(expected) == SHA.startswith(prefix)


@pytest.mark.parametrize("bad", ["A", "g", "/", "../", "0" * 65])
def test_key_prefix_rejects_non_hex(bad: str) -> None:
    with pytest.raises(ValueError, match="prefix"):
        key_prefix(bad)
