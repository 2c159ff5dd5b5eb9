"""The paper-parity table: every paper task, the shipped recipe against its baseline, 3 seeds.

    python scripts/paper_parity.py collect [--root .] [--parity meta/paper_parity.json]
    python scripts/paper_parity.py render  [--parity meta/paper_parity.json] [--page ../docs/results/tasks.md] [--check]

`collect` reads the per-seed dev metrics that each project's `seeds` commands wrote
(ROOT/FOLDER/metrics/VARIANT[/LANG]/seedN_dev.json; WNUT-17's also seedN_dev_noise0.5.json)
and stores every seed's figure in the committed meta/paper_parity.json ("ours"), beside the
paper's figures ("paper", entered by hand with their source; kept as they are). Tasks or
seeds that have not run are left out of "ours" with a note, never filled in.
`render` builds the markdown tables from that file alone (mean ± sample std over the seeds,
the difference of the means) and writes them between the paper-parity markers of the results
page, docs/results/tasks.md (and paper-parity-noaug's: the shipped recipe less the char-noise
augmenter, on the clean tasks); `--check` fails when the page's table is not what the file
gives (tests/project runs it). `--readme` is the old name of `--page`.
The metrics folders are not committed: meta/paper_parity.json is the record that ships.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import srsly
import typer
from tables import fmt_mean_spread, mean_spread, read_json, write_marked_block

HERE = Path(__file__).resolve().parent.parent
PAGE = HERE.parent / "docs" / "results" / "tasks.md"  # the results page with the markers


@dataclass(frozen=True)
class Row:
    """One line of the table: a task's score on one evaluation set of one project."""

    key: str  # the row's id in meta/paper_parity.json
    task: str  # what the table prints
    folder: str  # the project, relative to ROOT
    score: str  # the score's name in the table
    metric: str  # its key in the metrics JSON
    ours: str  # the variant of the shipped recipe ("ship" = project.yml's ship_variant)
    baseline: str  # the variant it is compared with
    language: Optional[str] = None  # MasakhaNER: metrics/VARIANT/LANG/seedN_dev.json
    eval_set: str = "dev"  # dev, or dev_noiseR (WNUT-17's perturbed dev)


MASAKHANER = ("amh", "hau", "ibo", "kin", "lug", "luo", "pcm", "swa", "wol", "yor")
ROWS: List[Row] = [
    Row("wnut17", "WNUT-17 NER", ".", "dev F1", "ents_f", "ship", "baseline"),
    Row(
        "wnut17-noise0.5",
        "WNUT-17 NER, noise 0.5",
        ".",
        "dev F1",
        "ents_f",
        "ship",
        "baseline",
        eval_set="dev_noise0.5",
    ),
    Row("tweebank", "Tweebank v2 POS", "tweebank", "dev UPOS acc", "tag_acc", "shipped", "baseline"),
    Row("tweeteval-f", "TweetEval emotion", "tweeteval", "val macro-F1", "cats_macro_f", "shipped", "baseline"),
    Row("tweeteval-acc", "TweetEval emotion", "tweeteval", "val accuracy", "cats_accuracy", "shipped", "baseline"),
    *[
        Row(f"masakhaner-{lang}", f"MasakhaNER ({lang})", "masakhaner", "dev F1", "ents_f", "shipped", "baseline", lang)
        for lang in MASAKHANER
    ],
    Row(
        "codeswitch-all", "Code-switching es-wix", "codeswitch", "dev char acc, All", "char_acc", "shipped", "charonly"
    ),
    Row(
        "codeswitch-mix",
        "Code-switching es-wix",
        "codeswitch",
        "dev char acc, MIX",
        "char_acc_mix",
        "shipped",
        "charonly",
    ),
]
# The shipped recipe less the char-noise augmenter (each task's variants.yml `shipped-noaug`),
# on the tasks besides WNUT-17 whose shipped rows carry it: a second table, beside the first's
# shipped-recipe figure of the same score (the row whose key is this one's without "-noaug").
NOAUG_ROWS: List[Row] = [
    Row(f"{row.key}-noaug", row.task, row.folder, row.score, row.metric, "shipped-noaug", row.baseline, row.language)
    for row in ROWS
    if row.folder in ("tweebank", "tweeteval", "codeswitch")
]


def ship_variant(root: Path) -> str:
    """project.yml's vars.ship_variant: the variant en_entangle_wnut is trained from."""
    return str(srsly.read_yaml(root / "project.yml")["vars"]["ship_variant"])


def seed_figures(folder: Path, metric: str, eval_set: str) -> Dict[str, float]:
    """{seed: figure} of every seedN_EVALSET.json in folder that holds the metric."""
    out: Dict[str, float] = {}
    for path in sorted(folder.glob(f"seed*_{eval_set}.json")) if folder.is_dir() else []:
        match = re.fullmatch(rf"seed(\d+)_{re.escape(eval_set)}\.json", path.name)
        value = (read_json(path) or {}).get(metric) if match else None
        if value is not None:
            out[match.group(1)] = round(float(value), 4)
    return out


def collect_row(root: Path, row: Row, ship: str) -> Dict:
    """The per-seed figures of the row's two models (an empty mapping where none ran)."""
    out = {}
    for side, variant in (("ours", ship if row.ours == "ship" else row.ours), ("baseline", row.baseline)):
        folder = root / row.folder / "metrics" / variant
        if row.language:
            folder = folder / row.language
        out[side] = {"variant": variant, "seeds": seed_figures(folder, row.metric, row.eval_set)}
    return out


def cell(figures: Dict[str, float]) -> str:
    """ "56.4 ± 0.8 (3)": mean ± sample std in percent and the number of seeds."""
    values = list(figures.values())
    return "–" if not values else f"{fmt_mean_spread(values, 1)} ({len(values)})"


def seeds_of(parity: Dict, key: str, side: str) -> Dict[str, float]:
    """The per-seed figures of one side ("ours" or "baseline") of a row of the record."""
    return ((parity.get("ours", {}).get(key) or {}).get(side) or {}).get("seeds", {})


def delta(ours: Dict[str, float], baseline: Dict[str, float]) -> str:
    a, b = mean_spread(list(ours.values()))[0], mean_spread(list(baseline.values()))[0]
    return "–" if a is None or b is None else f"{100 * (a - b):+.1f}"


def paper_cell(paper: Optional[Dict], which: str) -> str:
    value = (paper or {}).get(which)
    return "–" if value is None else f"{value:.2f}"


def table(parity: Dict) -> List[str]:
    """The results page's table: one line per row that has a figure of ours or of the paper."""
    lines = [
        "| task | score | paper: entangle | paper: baseline | ours: shipped recipe | ours: baseline | ours − baseline |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in ROWS:
        paper = parity.get("paper", {}).get(row.key)
        mine, base = seeds_of(parity, row.key, "ours"), seeds_of(parity, row.key, "baseline")
        if not mine and not base and not paper:
            continue
        cells = [row.task, row.score, paper_cell(paper, "entangle"), paper_cell(paper, "baseline")]
        cells += [cell(mine), cell(base), delta(mine, base)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def noaug_table(parity: Dict) -> List[str]:
    """The results page's second table: the shipped recipe less the augmenter, beside the shipped
    recipe and the baseline (one line per NOAUG_ROWS row that has run)."""
    lines = [
        "| task | score | ours: shipped recipe | ours: less the augmenter | ours: baseline | less the augmenter − baseline |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in NOAUG_ROWS:
        noaug, base = seeds_of(parity, row.key, "ours"), seeds_of(parity, row.key, "baseline")
        if not noaug:
            continue
        shipped = seeds_of(parity, row.key[: -len("-noaug")], "ours")
        cells = [row.task, row.score, cell(shipped), cell(noaug), cell(base), delta(noaug, base)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


app = typer.Typer(add_completion=False, no_args_is_help=True)


@app.command()
def collect(
    root: Path = typer.Option(HERE, "--root", help="the WNUT-17 project folder holding the task sub-projects"),
    parity_file: Path = typer.Option(HERE / "meta" / "paper_parity.json", "--parity"),
) -> None:
    """Store every seed's dev figure of each row's two models in --parity ("ours")."""
    parity = read_json(parity_file) or {}
    ship = ship_variant(root)
    ours, missing = {}, []
    for row in ROWS + NOAUG_ROWS:
        found = collect_row(root, row, ship)
        if found["ours"]["seeds"] or found["baseline"]["seeds"]:
            ours[row.key] = found
        else:
            missing.append(row.key)
    if not ours:
        sys.exit(f"✘ paper_parity.py: no seed metrics under {root} (run the projects' `seeds` commands first)")
    parity["ours"] = ours
    parity["not_run"] = missing
    srsly.write_json(parity_file, parity)
    print("\n".join(table(parity) + [""] + noaug_table(parity)))
    print(f"✔ {parity_file}: {len(ours)} rows; not run: {', '.join(missing) or 'none'}")


@app.command()
def render(
    parity_file: Path = typer.Option(HERE / "meta" / "paper_parity.json", "--parity"),
    page: Path = typer.Option(PAGE, "--page", "--readme", help="the results page holding the markers"),
    check: bool = typer.Option(False, "--check", help="fail if the page's table differs; write nothing"),
) -> None:
    """Write the two tables of --parity between the results page's paper-parity and
    paper-parity-noaug markers."""
    parity = read_json(parity_file)
    if parity is None:
        sys.exit(f"✘ paper_parity.py: no {parity_file}")
    command = "python scripts/paper_parity.py render"
    write_marked_block(page, "paper-parity", table(parity), parity_file, command, check)
    write_marked_block(page, "paper-parity-noaug", noaug_table(parity), parity_file, command, check)


def main(argv: Optional[Sequence[str]] = None) -> None:
    app(args=argv)


if __name__ == "__main__":
    main()
