"""``autograd-grader merge``: join the OUT folders of ``class --shard`` runs
into one gradebook and report, refusing what would make a gradebook lie:
a part given twice or a shard missing, a student graded in two parts, and
parts graded with other checks, seeds, grader versions or submissions."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from ..boundary.untrusted import shown
from ..i18n import msg
from ..reporters.files import write_json_atomic
from .class_command import RUN_FILE, build, fail, read_run
from .class_data import counted, students_text

# what every part must share, and how a mismatch is told
SHARED = (
    ("checks_sha256", "checks"),
    ("seed", "seed"),
    ("seeding", "seeding"),
    ("salt", "salt"),
    ("grader", "grader"),
    ("class_sha256", "class"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "parts",
        nargs="+",
        metavar="PART",
        help="OUT folders of 'autograd-grader class --shard' runs, or the OUT a job's tasks shared "
        "(its part-K-of-N folders)",
    )
    parser.add_argument("--out", required=True, metavar="OUT", help="the folder of the merged gradebook and report")
    parser.add_argument("--roster", default=None, metavar="CSV", help="as for 'class'")


def _reports(part: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(part.glob("*.json")):
        if path.name == RUN_FILE:
            continue
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(report, dict) and "student" in report:
            found[path.stem] = path
    return found


def problems(parts: list[Path], infos: list[dict], reports: list[dict[str, Path]]) -> list[str]:
    """Why these parts cannot be merged into one gradebook, each naming
    the parts concerned; empty when they can."""
    found = []
    names = [str(p) for p in parts]
    same: dict[Path, list[str]] = {}
    for resolved, name in zip(parts, names):
        same.setdefault(resolved, []).append(name)
    found += [msg("class.merge_twice", path=names[0]) for names in same.values() if len(names) > 1]
    seeded = len({json.dumps(info.get("seed")) for info in infos}) == 1 and infos[0].get("seed") is not None
    for field, what in SHARED:
        if field in ("salt", "seeding") and seeded:
            continue  # one seed given for every student: the salt seeds nothing
        values: dict[str, list[str]] = {}
        for name, info in zip(names, infos):
            values.setdefault(json.dumps(info.get(field)), []).append(name)
        if len(values) > 1:
            told = "; ".join(f"{', '.join(ps)}: {json.loads(v) if v != 'null' else '-'}" for v, ps in values.items())
            found.append(msg(f"class.merge_different_{what}", parts=told))
    specs = [info.get("shard") for info in infos]
    if any(specs):
        found += _shards(names, specs)
    graded: dict[str, str] = {}
    for name, held in zip(names, reports):
        for student in held:
            if student in graded and graded[student] != name:
                found.append(msg("class.merge_overlap", student=shown(student), first=graded[student], second=name))
            graded.setdefault(student, name)
    return found


def _shards(names: list[str], specs: list[str | None]) -> list[str]:
    if not all(specs):
        whole = [n for n, s in zip(names, specs) if not s]
        return [msg("class.merge_not_sharded", parts=", ".join(whole))]
    split = [tuple(int(x) for x in s.split("/")) for s in specs if s]  # every one (all(specs))
    counts = {n for _, n in split}
    if len(counts) > 1:
        return [msg("class.merge_shard_counts", parts="; ".join(f"{n}: {s}" for n, s in zip(names, specs)))]
    (count,) = counts
    found: list[str] = []
    seen: dict[int, str] = {}
    for name, (k, _) in zip(names, split):
        if k in seen:
            found.append(msg("class.merge_shard_twice", shard=f"{k}/{count}", first=seen[k], second=name))
        seen.setdefault(k, name)
    missing = [k for k in range(1, count + 1) if k not in seen]
    if missing:
        found.append(
            counted(
                "class.merge_shard_missing",
                len(missing),
                shards=", ".join(f"{k}/{count}" for k in missing),
                example=f"{missing[0]}/{count}",
            )
        )
    return found


def run(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    parts = []
    for given in (Path(p).resolve() for p in args.parts):
        # the OUT the tasks of a job shared: its part-K-of-N folders are the parts
        inner = sorted(given.glob("part-*-of-*/" + RUN_FILE)) if not (given / RUN_FILE).is_file() else []
        parts += [run_file.parent for run_file in inner] or [given]
    for part in parts:
        if not (part / RUN_FILE).is_file():
            return fail(msg("class.merge_not_a_run", path=str(part)))
    infos = [read_run(part) for part in parts]
    reports = [_reports(part) for part in parts]
    found = problems(parts, infos, reports)
    if found:
        for problem in found:
            print(problem, file=sys.stderr)
        return fail(msg("class.merge_refused"))
    out.mkdir(parents=True, exist_ok=True)
    for held in reports:
        for name, path in held.items():
            if path.parent != out:
                shutil.copyfile(path, out / f".{name}.json.tmp")
                os.replace(out / f".{name}.json.tmp", out / f"{name}.json")
    first = infos[0]
    run_info = {
        **first,
        "shard": None,
        "students": sorted(set().union(*(set(i.get("students") or []) for i in infos))),
        "started": min(str(i.get("started") or "") for i in infos),
        "finished": max(str(i.get("finished") or "") for i in infos) or None,
        "merged_from": [str(p) for p in parts],
    }
    write_json_atomic(out / RUN_FILE, run_info)
    for warning in build(out, run_info, args.roster):
        print(warning, file=sys.stderr)
    print(
        msg(
            "class.merged",
            students=students_text(sum(len(held) for held in reports)),
            parts=counted("class.n_parts", len(parts)),
            out=str(out),
        ),
        file=sys.stderr,
    )
    return 0
