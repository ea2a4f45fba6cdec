#!/usr/bin/python3
"""Writes data/unicode_tables.cpp: the character data that BERT normalization and
pre-tokenization need, from Python's unicodedata, adjusted to what Hugging Face tokenizers does.

Run from the repository root:  /usr/bin/python3 data/gen_unicode_tables.py

The reference (tokenizers 0.23.2, see tests/fixtures/make_tokenizer_reference.js) does not use
one Unicode version throughout:
  - general categories (control/format/private-use, punctuation, nonspacing marks) come from
    the unicode_categories crate, which holds Unicode 8.0 data;
  - NFD decompositions and combining classes come from unicode-normalization-alignments, which
    holds Unicode 9.0 data;
  - lowercasing is Rust's char::to_lowercase, Unicode 17.0 in the build on npm.
This Python has Unicode 14.0, so the code points whose answer differs are listed below. They were
measured by running the reference over every code point; the code point sweep in the test fixture
checks every one of them end to end, so a different reference version shows up there.
"""

import os
import unicodedata

EXPECTED_UNICODE = "14.0.0"


def code_point_set(ranges):
    return frozenset(cp for first, last in ranges for cp in range(first, last + 1))


# Cf in 14.0 but unassigned in 8.0: the reference keeps them.
NOT_DROPPED = code_point_set([(0x0890, 0x0891), (0x08E2, 0x08E2), (0x110CD, 0x110CD),
                              (0x13430, 0x13438)])
# P* in 14.0 but unassigned in 8.0.
NOT_PUNCTUATION = code_point_set([
    (0x061D, 0x061D), (0x09FD, 0x09FD), (0x0A76, 0x0A76), (0x0C77, 0x0C77), (0x0C84, 0x0C84),
    (0x1B7D, 0x1B7E), (0x2E43, 0x2E4F), (0x2E52, 0x2E5D), (0x10EAD, 0x10EAD), (0x10F55, 0x10F59),
    (0x10F86, 0x10F89), (0x1144B, 0x1144F), (0x1145A, 0x1145B), (0x1145D, 0x1145D),
    (0x11660, 0x1166C), (0x116B9, 0x116B9), (0x1183B, 0x1183B), (0x11944, 0x11946),
    (0x119E2, 0x119E2), (0x11A3F, 0x11A46), (0x11A9A, 0x11A9C), (0x11A9E, 0x11AA2),
    (0x11C41, 0x11C45), (0x11C70, 0x11C71), (0x11EF7, 0x11EF8), (0x11FFF, 0x11FFF),
    (0x12FF1, 0x12FF2), (0x16E97, 0x16E9A), (0x16FE2, 0x16FE2), (0x1E95E, 0x1E95F),
])
# Po in 8.0, recategorized since (U+166D is So now, U+111C9 Mn).
PUNCTUATION_IN_8_0 = code_point_set([(0x166D, 0x166D), (0x111C9, 0x111C9)])
# Mn in 14.0 but unassigned (or, for U+111C9, Po) in 8.0: the reference does not strip them.
NOT_NONSPACING_MARK = code_point_set([
    (0x07FD, 0x07FD), (0x0898, 0x089F), (0x08CA, 0x08E1), (0x09FE, 0x09FE), (0x0AFA, 0x0AFF),
    (0x0B55, 0x0B55), (0x0C04, 0x0C04), (0x0C3C, 0x0C3C), (0x0D00, 0x0D00), (0x0D3B, 0x0D3C),
    (0x0D81, 0x0D81), (0x0EBA, 0x0EBA), (0x180F, 0x180F), (0x1885, 0x1886), (0x1ABF, 0x1ACE),
    (0x1DF6, 0x1DFB), (0xA82C, 0xA82C), (0xA8C5, 0xA8C5), (0xA8FF, 0xA8FF), (0xA9BD, 0xA9BD),
    (0x10D24, 0x10D27), (0x10EAB, 0x10EAC), (0x10F46, 0x10F50), (0x10F82, 0x10F85),
    (0x11070, 0x11070), (0x11073, 0x11074), (0x110C2, 0x110C2), (0x111C9, 0x111C9),
    (0x111CF, 0x111CF), (0x1123E, 0x1123E), (0x1133B, 0x1133B), (0x11438, 0x1143F),
    (0x11442, 0x11444), (0x11446, 0x11446), (0x1145E, 0x1145E), (0x1182F, 0x11837),
    (0x11839, 0x1183A), (0x1193B, 0x1193C), (0x1193E, 0x1193E), (0x11943, 0x11943),
    (0x119D4, 0x119D7), (0x119DA, 0x119DB), (0x119E0, 0x119E0), (0x11A01, 0x11A0A),
    (0x11A33, 0x11A38), (0x11A3B, 0x11A3E), (0x11A47, 0x11A47), (0x11A51, 0x11A56),
    (0x11A59, 0x11A5B), (0x11A8A, 0x11A96), (0x11A98, 0x11A99), (0x11C30, 0x11C36),
    (0x11C38, 0x11C3D), (0x11C3F, 0x11C3F), (0x11C92, 0x11CA7), (0x11CAA, 0x11CB0),
    (0x11CB2, 0x11CB3), (0x11CB5, 0x11CB6), (0x11D31, 0x11D36), (0x11D3A, 0x11D3A),
    (0x11D3C, 0x11D3D), (0x11D3F, 0x11D45), (0x11D47, 0x11D47), (0x11D90, 0x11D91),
    (0x11D95, 0x11D95), (0x11D97, 0x11D97), (0x11EF3, 0x11EF4), (0x16F4F, 0x16F4F),
    (0x16FE4, 0x16FE4), (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46), (0x1E000, 0x1E006),
    (0x1E008, 0x1E018), (0x1E01B, 0x1E021), (0x1E023, 0x1E024), (0x1E026, 0x1E02A),
    (0x1E130, 0x1E136), (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF), (0x1E944, 0x1E94A),
])
# Mn in 8.0, Mc since.
NONSPACING_MARK_IN_8_0 = code_point_set([(0x1734, 0x1734)])
# Combining marks added after 9.0: class 0 (a starter) for the reference's canonical ordering.
NO_COMBINING_CLASS = code_point_set([
    (0x07FD, 0x07FD), (0x0898, 0x089F), (0x08CA, 0x08D3), (0x09FE, 0x09FE), (0x0C3C, 0x0C3C),
    (0x0D3B, 0x0D3C), (0x0EBA, 0x0EBA), (0x1715, 0x1715), (0x1ABF, 0x1ACE), (0x1DF6, 0x1DFA),
    (0xA82C, 0xA82C), (0x10D24, 0x10D27), (0x10EAB, 0x10EAC), (0x10F46, 0x10F50),
    (0x10F82, 0x10F85), (0x11070, 0x11070), (0x1133B, 0x1133B), (0x1145E, 0x1145E),
    (0x11839, 0x1183A), (0x1193D, 0x1193E), (0x11943, 0x11943), (0x119E0, 0x119E0),
    (0x11A34, 0x11A34), (0x11A47, 0x11A47), (0x11A99, 0x11A99), (0x11D42, 0x11D42),
    (0x11D44, 0x11D45), (0x11D97, 0x11D97), (0x16FF0, 0x16FF1), (0x1E130, 0x1E136),
    (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF),
])
# Decomposes since 13.0.
NO_DECOMPOSITION = code_point_set([(0x11938, 0x11938)])
# Lowercase mappings of letters added after 14.0: (first, last, first lowercase).
LOWERCASE_AFTER_14_0 = [
    (0x1C89, 0x1C89, 0x1C8A), (0xA7CB, 0xA7CB, 0x0264), (0xA7CC, 0xA7CC, 0xA7CD),
    (0xA7CE, 0xA7CE, 0xA7CF), (0xA7D2, 0xA7D2, 0xA7D3), (0xA7D4, 0xA7D4, 0xA7D5),
    (0xA7DA, 0xA7DA, 0xA7DB), (0xA7DC, 0xA7DC, 0x019B), (0x10D50, 0x10D65, 0x10D70),
    (0x16EA0, 0x16EB8, 0x16EBB),
]

# BERT's "Chinese character" blocks as tokenizers spells them (note 0x2B920, not 0x2B820).
CJK_IDEOGRAPHS = code_point_set([
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
])

# Rust's char::is_whitespace (the White_Space property).
WHITE_SPACE = code_point_set([
    (0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
])

HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3

# CharFlag in data/unicode_tables.h.
FLAG_DROP, FLAG_SPACE, FLAG_PUNCTUATION, FLAG_CJK = 1, 2, 4, 8
FLAG_NONSPACING_MARK, FLAG_HAS_DECOMPOSITION, FLAG_HAS_LOWERCASE = 16, 32, 64


def is_ascii_punctuation(cp):
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126


def code_points():
    return (cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def decomposition(cp):
    if cp in NO_DECOMPOSITION or HANGUL_FIRST <= cp <= HANGUL_LAST:
        return None
    d = unicodedata.normalize("NFD", chr(cp))
    return [ord(c) for c in d] if d != chr(cp) else None


def lowercase(cp):
    for first, last, lower in LOWERCASE_AFTER_14_0:
        if first <= cp <= last:
            return [lower + cp - first]
    lower = chr(cp).lower()
    return [ord(c) for c in lower] if lower != chr(cp) else None


def flags_of(cp):
    category = unicodedata.category(chr(cp))
    # clean_text drops NUL, U+FFFD and "other" characters except \t \n \r (Cn is not included).
    drop = cp in (0, 0xFFFD) or (category in ("Cc", "Cf", "Co") and cp not in (9, 10, 13))
    drop = drop and cp not in NOT_DROPPED
    punct = category.startswith("P") and cp not in NOT_PUNCTUATION
    punct = punct or is_ascii_punctuation(cp) or cp in PUNCTUATION_IN_8_0
    mark = category == "Mn" and cp not in NOT_NONSPACING_MARK
    mark = mark or cp in NONSPACING_MARK_IN_8_0
    flags = 0
    flags |= FLAG_DROP if drop else 0
    flags |= FLAG_SPACE if cp in WHITE_SPACE else 0
    flags |= FLAG_PUNCTUATION if punct else 0
    flags |= FLAG_CJK if cp in CJK_IDEOGRAPHS else 0
    flags |= FLAG_NONSPACING_MARK if mark else 0
    flags |= FLAG_HAS_DECOMPOSITION if decomposition(cp) or HANGUL_FIRST <= cp <= HANGUL_LAST else 0
    flags |= FLAG_HAS_LOWERCASE if lowercase(cp) else 0
    return flags


def combining_class(cp):
    return 0 if cp in NO_COMBINING_CLASS else unicodedata.combining(chr(cp))


def property_ranges():
    """Maximal runs of code points with equal (flags, combining class), the default (0, 0) left out."""
    ranges = []
    for cp in code_points():
        value = (flags_of(cp), combining_class(cp))
        if value == (0, 0):
            continue
        if ranges and ranges[-1][1] == cp - 1 and tuple(ranges[-1][2:]) == value:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp, *value])
    return ranges


def mapping_table(mapping_of):
    entries, pool = [], []
    for cp in code_points():
        mapped = mapping_of(cp)
        if mapped:
            entries.append((cp, len(pool), len(mapped)))
            pool.extend(mapped)
    return entries, pool


def rows(items, per_line):
    lines = []
    for i in range(0, len(items), per_line):
        lines.append("    " + " ".join(items[i:i + per_line]))
    return "\n".join(lines)


def main():
    if unicodedata.unidata_version != EXPECTED_UNICODE:
        raise SystemExit(f"unicodedata is {unicodedata.unidata_version}; the exception lists in this "
                         f"script were measured against {EXPECTED_UNICODE}: re-measure them first")
    ranges = property_ranges()
    decompositions, decomposition_pool = mapping_table(decomposition)
    lowercases, lowercase_pool = mapping_table(lowercase)
    # Bounds declared in data/unicode_tables.h.
    assert max(n for _, _, n in decompositions) <= 4 and max(n for _, _, n in lowercases) <= 3
    assert len(decomposition_pool) < 65536 and len(lowercase_pool) < 65536
    hex_ = lambda v: f"0x{v:X}"
    out = [
        "// Generated by data/gen_unicode_tables.py from Python's unicodedata "
        f"{unicodedata.unidata_version}; do not edit.",
        '#include "data/unicode_tables.h"',
        "",
        "namespace qdq::unicode {",
        "",
        "const CodePointRange kPropertyRanges[] = {",
        rows([f"{{{hex_(a)}, {hex_(b)}, {f}, {c}}}," for a, b, f, c in ranges], 4),
        "};",
        "const size_t kPropertyRangeCount = sizeof(kPropertyRanges) / sizeof(kPropertyRanges[0]);",
        "",
        "const CodePointMapping kDecompositions[] = {",
        rows([f"{{{hex_(cp)}, {o}, {n}}}," for cp, o, n in decompositions], 6),
        "};",
        "const size_t kDecompositionCount = sizeof(kDecompositions) / sizeof(kDecompositions[0]);",
        "const char32_t kDecompositionPool[] = {",
        rows([hex_(v) + "," for v in decomposition_pool], 10),
        "};",
        "",
        "const CodePointMapping kLowercases[] = {",
        rows([f"{{{hex_(cp)}, {o}, {n}}}," for cp, o, n in lowercases], 6),
        "};",
        "const size_t kLowercaseCount = sizeof(kLowercases) / sizeof(kLowercases[0]);",
        "const char32_t kLowercasePool[] = {",
        rows([hex_(v) + "," for v in lowercase_pool], 10),
        "};",
        "",
        "}  // namespace qdq::unicode",
        "",
    ]
    target = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unicode_tables.cpp")
    with open(target, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {target}: {len(ranges)} property ranges, {len(decompositions)} decompositions, "
          f"{len(lowercases)} lowercase mappings")


if __name__ == "__main__":
    main()
