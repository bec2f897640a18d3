"""tests/support/posting.py against INN2: one real release per posting style (par2cmdline's PAR2 set,
yEnc parts), interleaved with another poster's release, one of them cross-posted to a second group; the
overview read back carries each style's subjects, the bodies each style's yEnc names, the PAR2 index
the real names. (What the indexer makes of them is for the end-to-end tests of issue 16.)"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

from tests.support import inn2 as support
from tests.support.posting import make_release, post
from usenet_indexer.indexing import sample
from usenet_indexer.indexing.par2 import read_par2
from usenet_indexer.nntp.client import NNTPClient
from usenet_indexer.nntp.yenc import decode


async def test_one_release_per_style_posted_and_read_back(
    inn2_group: str, inn2_client: Callable[..., NNTPClient], tmp_path: Path
) -> None:
    rng = random.Random(16)
    other = support.new_group()
    posted = [
        make_release(
            tmp_path,
            f"Quiet.Harbor.20{10 + k}.1080p.WEB.h264-GRP",
            style,
            rng,
            poster="poster@example.test (Poster)",
            groups=(inn2_group, other) if style == "named" else (inn2_group,),
        )
        for k, style in enumerate(sample.STYLES)
    ]
    # Another poster's release at the same time: its articles interleave with the others'.
    noise = make_release(
        tmp_path,
        "Field.Notes.S01E01.720p.WEB.h264-TEAM",
        "named",
        rng,
        poster="else@example.test",
        groups=(inn2_group,),
    )
    everything = [*posted, noise]
    assert post(everything, rng) == sum(len(p.articles) for p in everything)

    async with inn2_client() as client:
        info = await client.group(inn2_group)
        lines = (await client.over_chunk(info.low, info.high, compress=False)).data.split(b"\r\n")
        fields = [line.decode().split("\t") for line in lines if line]
        by_id = {f[4]: f for f in fields}
        # The other poster's articles fall inside the styled releases' bursts: posted at the same time.
        theirs = [int(by_id[a.message_id][0]) for a in noise.articles]
        spans = [[int(by_id[a.message_id][0]) for a in p.articles] for p in posted]
        assert any(min(span) < n < max(span) for span in spans for n in theirs)
        for p in posted:
            mine = [by_id[a.message_id] for a in p.articles]
            assert len(mine) == len(p.articles)  # every article in the group, in posting order
            numbers = [int(f[0]) for f in mine]
            assert numbers == sorted(numbers)
            subjects = [f[1] for f in mine]
            if p.style == "fully_random":
                assert len(set(subjects)) == len(subjects)
                assert not any("yEnc" in s or re.search(r"\[\d+/\d+\]", s) for s in subjects)
            elif p.style == "per_file_random":
                assert all(
                    re.fullmatch(r'\[\d+/\d+\] - "[0-9a-f]{32}" yEnc \(\d+/\d+\)', s) for s in subjects
                )
            elif p.style == "noisy":
                assert all(s.startswith("[PRiVATE]-[") and p.name in s for s in subjects)
            elif p.style == "par2_obfuscated":
                assert all(p.name not in s and p.release.collection in s for s in subjects)
            else:
                assert all(p.name in s for s in subjects)
            if len(p.release.groups) > 1:  # the cross-post: in both groups, the Xref naming both
                assert all(other in f[8] and inn2_group in f[8] for f in mine)
            # The first article of each file: its yEnc name is the style's; the PAR2 names the real files.
            for index, real in enumerate(p.files):
                first = p.articles[p.parts.index((index, 1))]
                decoded = decode(await client.body(first.message_id))
                assert decoded.name == p.release.files[index].yenc and decoded.part == 1
                if real.name == f"{p.name}.par2":
                    names = {f.name for f in read_par2(decoded.data).files}
                    assert names == {f.name for f in p.files if not f.name.endswith(".par2")}
                    assert decoded.data == real.data
        other_info = await client.group(other)
        crossed = (await client.over_chunk(other_info.low, other_info.high, compress=False)).data
        named = next(p for p in posted if len(p.release.groups) > 1)
        assert all(a.message_id.encode() in crossed for a in named.articles)
