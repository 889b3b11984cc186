"""For the streaming rewriter tests (HTML, CSS): a body fed in pieces, and the check that
where the pieces are cut never changes the output."""

from __future__ import annotations

from collections.abc import Callable

from archive_pipelines.replay.rewriting import BodyRewriter


def fed_in_pieces(rewriter: BodyRewriter, body: bytes, cuts: list[int] | None = None) -> bytes:
    """What `rewriter` makes of `body` fed in pieces cut at `cuts` (one piece if None), then closed."""
    out, start = [], 0
    for cut in cuts or []:
        out.append(rewriter.feed(body[start:cut]))
        start = cut
    out.append(rewriter.feed(body[start:]))
    out.append(rewriter.close())
    return b"".join(out)


def same_at_every_boundary(new_rewriter: Callable[[], BodyRewriter], body: bytes) -> bytes:
    """The output of `body` fed whole; asserted the same cut at every single position, and fed
    byte by byte."""
    whole = fed_in_pieces(new_rewriter(), body)
    for cut in range(len(body) + 1):
        assert fed_in_pieces(new_rewriter(), body, [cut]) == whole, cut
    assert fed_in_pieces(new_rewriter(), body, list(range(1, len(body)))) == whole
    return whole
