"""Real English prose for calibration and evaluation, split so the two never share a sentence.

The text is the Python language reference that every Python ships (`pydoc_data.topics`: 79
sections, ~1900 clean sentences once code and markup are dropped). Sections, not sentences,
are split: a section goes wholly to calibration or wholly to evaluation, so held-out numbers
never come from the same paragraph calibration saw.

    real_text.sentences("calib")   # sentences of the calibration sections
    real_text.sentences("eval")    # sentences of the other sections
"""
import re
import zlib

import pydoc_data.topics

# Prose only: lines that carry code, tables or markup say little about real text statistics.
_NOT_PROSE = re.compile(r"[>{}\[\]=\\|]|\.\.\.|::|\*\*\*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _section_is_calibration(name):
    # A fixed hash (not Python's salted hash()) so the split is the same on every machine.
    return zlib.crc32(name.encode()) % 4 == 0


def _clean_sentences(text):
    flat = re.sub(r"\s+", " ", text)
    for s in _SENTENCE_END.split(flat):
        if 40 <= len(s) <= 300 and s[0].isupper() and not _NOT_PROSE.search(s):
            yield s


def sentences(split):
    """All clean sentences of the calibration ("calib") or evaluation ("eval") sections, in a
    fixed order, without repeats. About a quarter of the sections are calibration."""
    if split not in ("calib", "eval"):
        raise ValueError(f"split must be 'calib' or 'eval', not {split!r}")
    calib, held_out = [], []
    for name in sorted(pydoc_data.topics.topics):
        target = calib if _section_is_calibration(name) else held_out
        target.extend(_clean_sentences(pydoc_data.topics.topics[name]))
    if split == "calib":
        return list(dict.fromkeys(calib))
    # The reference repeats a few stock sentences across sections; those stay calibration's.
    seen = set(calib)
    return [s for s in dict.fromkeys(held_out) if s not in seen]


if __name__ == "__main__":
    for split in ("calib", "eval"):
        s = sentences(split)
        print(f"{split}: {len(s)} sentences, e.g. {s[0]!r}")
    assert not set(sentences("calib")) & set(sentences("eval"))
