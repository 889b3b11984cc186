"""Realistic-looking prose for test pages, drawn from a pool built once per seed.

Pages pick whole paragraphs from the pool, so rendering a 40 KB page costs a few dozen
choices instead of thousands of words.
"""

from __future__ import annotations

import functools
import random

from archive_testkit.testweb.seeding import stable_rng

_VOCABULARY = """
the of and to in is that for it as was with be by on not he this are or his from at which
but have an they you were her all she there would their we him been has when who will more
no if out so said what up its about into than them can only other new some could time these
two may then do first any my now such like our over man me even most made after also did many
before must through back years where much your way well down should because each just those
people how too little state good very make world still own see men work long get here between
both life being under never day same another know while last might us great old year off come
since against go came right used take three archive crawler frontier harvest snapshot index
record replica storage network server browser document library history museum collection
river mountain village harbour market garden station bridge valley forest island railway
weather season morning evening winter summer autumn spring journey letter report chapter
committee council village school teacher student science language music painting theatre
cinema kitchen recipe bread cheese coffee water stone copper silver engine signal protocol
request response header payload checksum version release patch module package service queue
worker schedule partition segment policy quota budget ledger invoice customer supplier
café naïve Zürich München São Paulo Kraków señor façade déjà vu résumé coöperate Ærøskøbing
"""
_WORDS = tuple(_VOCABULARY.split())

_POOL_SIZE = 512


@functools.lru_cache(maxsize=16)
def paragraph_pool(seed: int) -> tuple[str, ...]:
    """Paragraphs (plain text, no markup characters) shared by every page of a seed."""
    rng = stable_rng(seed, "paragraphs")
    return tuple(_paragraph(rng) for _ in range(_POOL_SIZE))


def title_words(rng: random.Random, low: int = 3, high: int = 7) -> str:
    """A capitalised phrase for titles and headings."""
    return " ".join(w[0].upper() + w[1:] for w in rng.choices(_WORDS, k=rng.randint(low, high)))


@functools.lru_cache(maxsize=16)
def anchor_pool(seed: int) -> tuple[str, ...]:
    """Short link texts shared by every page of a seed."""
    rng = stable_rng(seed, "anchors")
    return tuple(" ".join(rng.choices(_WORDS, k=rng.randint(1, 4))) for _ in range(_POOL_SIZE))


def _sentence(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(6, 18))
    if len(words) > 9 and rng.random() < 0.4:
        words[rng.randint(3, len(words) - 4)] += ","
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice(".....?!")


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(6, 18)))
