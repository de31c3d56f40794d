from __future__ import annotations

import pytest

from bucketdigest.ingestor.lfs import MalformedPointer, looks_like_pointer, parse_pointer

OID = "f6" * 32
GOOD = f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize 843434\n".encode()


def test_a_valid_pointer_gives_its_oid_and_size() -> None:
    pointer = parse_pointer(GOOD)
    assert (pointer.oid, pointer.size) == (OID, 843434)
    assert looks_like_pointer(GOOD)


def test_extension_lines_in_key_order_are_accepted() -> None:
    blob = GOOD.replace(b"oid", b"ext-0-foo sha256:" + b"1" * 64 + b"\noid")
    assert parse_pointer(blob).oid == OID


@pytest.mark.parametrize(
    ("blob", "reason"),
    [
        (GOOD.replace(b"v1", b"v2"), "first line"),
        (GOOD.rstrip(b"\n"), "newline"),
        (GOOD.replace(OID.encode(), OID.upper().encode()), "lowercase hex"),
        (GOOD.replace(OID.encode(), OID[:60].encode()), "lowercase hex"),
        (GOOD.replace(b"843434", b"12x"), "whole number"),
        (GOOD.replace(b"843434", b"-1"), "whole number"),
        (GOOD.replace(b"size 843434\n", b""), "size"),
        (GOOD.replace(b"oid", b"zzz"), "not sorted"),
        (GOOD + b"x" * 1024, "under 1024"),
    ],
)
def test_malformed_pointers_say_what_is_wrong(blob: bytes, reason: str) -> None:
    with pytest.raises(MalformedPointer, match=reason):
        parse_pointer(blob)


def test_ordinary_small_files_are_not_taken_for_pointers() -> None:
    assert not looks_like_pointer(b"hello\n")
    assert not looks_like_pointer(b"%PDF-1.7 tiny")
