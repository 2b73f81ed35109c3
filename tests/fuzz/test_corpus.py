"""The recorded client frames: every one decodes as the broker would decode it, and mutations of them are
rejected only with the protocol's own errors. Re-record with `python -m tests.fuzz.record_corpus`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz import corpus, mutations
from tests.fuzz.apis import REJECTIONS
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.nulls import find_illegal_nulls
from tests.fuzz.pipeline import PRODUCE, decode_frame

FRAMES = corpus.load()


def _api(frame: bytes) -> str:
    decoded = decode_frame(frame)
    assert decoded is not None
    spec, header, _ = decoded
    return f"{spec.name}-v{header.api_version}"


def test_corpus_is_small_and_varied() -> None:
    assert corpus.CORPUS_PATH.stat().st_size < corpus.MAX_CORPUS_BYTES
    assert len(FRAMES) == len(corpus.dedupe(FRAMES))
    apis = {_api(f).split("-")[0] for f in FRAMES}
    assert {"Produce", "Fetch", "JoinGroup", "OffsetCommit", "CreateTopics", "CreatePartitions"} <= apis


def test_corpus_file_round_trips() -> None:
    assert corpus.decode(corpus.encode(FRAMES)) == FRAMES
    with pytest.raises(ValueError):
        corpus.decode(corpus.encode(FRAMES)[:-1])


@pytest.mark.parametrize("frame", FRAMES, ids=[f"{i}-{_api(f)}" for i, f in enumerate(FRAMES)])
def test_recorded_frame_decodes_cleanly(frame: bytes) -> None:
    decoded = decode_frame(frame)
    assert decoded is not None, "a client sent an API or version the broker does not serve"
    spec, header, request = decoded
    if spec is PRODUCE:
        assert request.topics
        return
    assert find_illegal_nulls(request, header.api_version) == []
    request._header = None  # decoded messages lack the slot that encode() updates
    assert bytes(request.encode(version=header.api_version)) == frame[header.body_offset :]


@fuzz_settings(share=20)
@given(st.sampled_from(FRAMES), mutations.mutations(mutations.KINDS))
def test_mutated_recorded_frame_raises_only_protocol_errors(
    frame: bytes, muts: list[mutations.Mutation]
) -> None:
    try:
        decode_frame(mutations.apply_all(frame, muts))
    except REJECTIONS:
        pass
