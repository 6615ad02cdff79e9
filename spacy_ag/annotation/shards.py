"""The shards of a directory run: one output file per input file, each appearing only when complete.

An input file ``INPUT_DIR/a/b.txt`` becomes ``OUT_DIR/a/b.txt``. A shard is
written to ``OUT_DIR/a/.b.txt.part`` and renamed over its name when its last
line is written, so a shard that exists is complete: a rerun skips it, and a
run stopped half-way resumes where it stopped (a stale ``.part`` file is
simply written again). Hidden files and directories of the input (names
starting with ".") are not read, so the temporary names cannot collide with
an input.

Skipping complete shards is only right if they were made as this run makes
them, so the output directory records what made its shards (`MANIFEST`: the
command, its options and the SHA-256 of the model's bytes), and a run with
another model or other options is refused rather than mixing two models in
one output (`claim_shards`); with ``force`` it rewrites every shard.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, TextIO, Tuple

from ..archive import naming_failed_write, write_atomic_file
from ..errors import AnnotationError, Errors

__all__ = ["MANIFEST", "PartFile", "Shard", "ShardWriter", "claim_shards", "plan_shards"]

#: What made the shards of an output directory, beside them. Hidden, as the input's hidden files are
#: not read, so it is never the shard of an input file.
MANIFEST = ".spacy-ag-shards.json"


@dataclass(frozen=True)
class Shard:
    """One input file and where its output goes; `size` in bytes, for the progress."""

    source: Path
    target: Path
    size: int

    @property
    def temporary(self) -> Path:
        return self.target.with_name(f".{self.target.name}.part")


def _input_files(root: Path) -> List[Path]:
    """The regular, non-hidden files under `root`, in a fixed (sorted) order."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(Path(folder) / f for f in sorted(files)
                     if not f.startswith(".") and os.path.isfile(os.path.join(folder, f)))
    return found


def plan_shards(input_dir: Path, output_dir: Optional[Path]) -> Tuple[List[Shard], List[Shard]]:
    """Check the two directories and list the shards: (still to write, complete already).

    Raises AnnotationError (one line) for a missing input directory, a missing
    --output, an output inside the input (a rerun would read the shards as
    input) and an output that is a file.
    """
    if not input_dir.is_dir():
        raise AnnotationError(Errors.E130.format(path=input_dir))
    if output_dir is None:
        raise AnnotationError(Errors.E131.format(path=input_dir))
    inside, outside = input_dir.resolve(), output_dir.resolve()
    if outside == inside or inside in outside.parents:
        raise AnnotationError(Errors.E132.format(output=output_dir, input=input_dir))
    if output_dir.exists() and not output_dir.is_dir():
        raise AnnotationError(Errors.E133.format(path=output_dir))
    pending, complete = [], []
    for source in _input_files(input_dir):
        shard = Shard(source, output_dir / source.relative_to(input_dir), source.stat().st_size)
        (complete if shard.target.is_file() else pending).append(shard)
    return pending, complete


def _recorded(output_dir: Path) -> Optional[Dict[str, Any]]:
    try:
        record = json.loads((output_dir / MANIFEST).read_text(encoding="utf8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def describe_maker(record: Mapping[str, Any]) -> str:
    """`spacy-ag segment --format text` with the model of sha256 1a2b3c4d5e6f: for the refusing line."""
    options = " ".join(f"--{key.replace('_', '-')} {value}" for key, value in sorted(record.get("options", {}).items())
                       if value is not None)
    return (f"`{record.get('command', '?')}{' ' + options if options else ''}` with the model of sha256 "
            f"{str(record.get('model_sha256', '?'))[:12]}")


def claim_shards(input_dir: Path, output_dir: Path, made_by: Mapping[str, Any], force: bool = False
                 ) -> Tuple[List[Shard], List[Shard]]:
    """`plan_shards`, after making sure the complete shards are `made_by`'s (the command, its options and
    the model's SHA-256) and recording it in `MANIFEST` before any shard is written.

    Complete shards made otherwise, or by an unknown maker (no manifest), are refused in one line
    (E204, E205) unless `force`, which removes them first, so that an interrupted forced run cannot
    leave old shards under the new record.
    """
    pending, complete = plan_shards(input_dir, output_dir)
    made_by = json.loads(json.dumps(made_by, sort_keys=True))
    recorded = _recorded(output_dir)
    if recorded == made_by:
        return pending, complete
    if complete and not force:
        if recorded is None:
            raise AnnotationError(Errors.E205.format(path=output_dir, count=len(complete), s="s" * (len(complete) > 1),
                                                     first=complete[0].target.relative_to(output_dir),
                                                     manifest=MANIFEST))
        raise AnnotationError(Errors.E204.format(path=output_dir, was=describe_maker(recorded),
                                                 now=describe_maker(made_by), manifest=output_dir / MANIFEST))
    for shard in complete:
        shard.target.unlink()
    write_atomic_file(output_dir / MANIFEST, (json.dumps(made_by, indent=1, sort_keys=True) + "\n").encode("utf8"))
    return plan_shards(input_dir, output_dir)


class PartFile:
    """A text file written under a temporary name beside it: `commit` makes it appear whole (on disk,
    then renamed over its name), `discard` removes the part written so far. A full disk is one
    OutputWriteError naming the target (`naming_failed_write`); the part file is then discarded.
    Without a temporary name (`temporary` None: a device or pipe such as /dev/stdout, which a rename
    would replace by a regular file) the target itself is written."""

    def __init__(self, target: Path, temporary: Optional[Path]):
        self.target, self.temporary = target, temporary
        with naming_failed_write(target):
            target.parent.mkdir(parents=True, exist_ok=True)
            self.stream: Optional[TextIO] = open(temporary or target, "w", encoding="utf8", newline="\n")

    def write(self, lines: List[str]) -> None:
        with naming_failed_write(self.target):
            self.stream.writelines(line + "\n" for line in lines)

    def commit(self) -> None:
        with naming_failed_write(self.target):
            self.stream.flush()
            if self.temporary is not None:
                os.fsync(self.stream.fileno())  # on disk before the rename makes it complete
            self.stream.close()
            self.stream = None
            if self.temporary is not None:
                os.replace(self.temporary, self.target)

    def discard(self) -> None:
        """Remove the part written; closing may fail as the writes did (a full disk), which must not keep
        the part file, nor replace the error being handled."""
        if self.stream is not None:
            stream, self.stream = self.stream, None
            try:
                stream.close()
            except OSError:
                pass
        if self.temporary is not None and self.temporary.exists():  # after `commit`: renamed over the target
            self.temporary.unlink()


class ShardWriter(PartFile):
    """Writes one shard under its temporary name (`Shard.temporary`)."""

    def __init__(self, shard: Shard):
        self.shard = shard
        super().__init__(shard.target, shard.temporary)
