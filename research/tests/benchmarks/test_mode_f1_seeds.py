"""research/benchmarks/mode_f1_seeds.py: the per-seed F1 of fp32 and the modes' differences
from it, as one table; and the recorded table in docs/results/speed.md is what the committed
per-seed files give."""

import json
import statistics
from pathlib import Path

import mode_f1_seeds  # research/benchmarks/mode_f1_seeds.py (setup.cfg: pytest pythonpath)
import pytest

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "docs" / "results" / "data" / "mode_f1"  # entangle-aug's seeds, the recipe shipped before
SHIPPED = REPO / "docs" / "results" / "data" / "mode_f1_both_mild"  # the shipped recipe's, saturated int8
# the shipped pipeline's (make wnut's budget), exact int8 products
EXACT = REPO / "docs" / "results" / "data" / "mode_f1_exact"


def _write(path: Path, smoothing, fp32, modes) -> Path:
    data = {"pipeline": "p", "onnx_int8_smoothing": smoothing, "fp32": fp32, **modes}
    path.write_text(json.dumps(data), encoding="utf8")
    return path


def test_differences_per_seed_and_their_mean_and_sample_std(tmp_path):
    files = []
    for seed, (clean, noisy) in enumerate([(0.50, 0.40), (0.52, 0.41), (0.54, 0.42)]):
        fp32 = {"dev.spacy": clean, "dev_noise0.5.spacy": noisy}
        files.append(
            _write(
                tmp_path / f"seed{seed}_smoothing_0.5.json",
                0.5,
                fp32,
                {
                    "onnx-int8": {"dev.spacy": clean - 0.001 * seed, "dev_noise0.5.spacy": noisy + 0.002},
                    "int8": {"dev.spacy": clean, "dev_noise0.5.spacy": noisy - 0.01},
                },
            )
        )
        files.append(
            _write(
                tmp_path / f"seed{seed}_smoothing_off.json",
                None,
                fp32,
                {"onnx-int8": {"dev.spacy": clean + 0.003, "dev_noise0.5.spacy": noisy}},
            )
        )
    seeds, table = mode_f1_seeds.rows(sorted(files))
    assert seeds == ["seed 0", "seed 1", "seed 2"]
    assert set(table) == {"`fp32` (F1)", "`onnx-int8`, smoothing 0.5", "`onnx-int8`, smoothing off", "`int8`"}
    smoothed = [table["`onnx-int8`, smoothing 0.5"][s]["dev.spacy"] for s in seeds]
    assert smoothed == pytest.approx([0.0, -0.1, -0.2])
    text = mode_f1_seeds.render(sorted(files))
    row = next(line for line in text.splitlines() if "smoothing 0.5" in line)
    assert f"{statistics.mean(smoothed):+.2f} ± {statistics.stdev(smoothed):.2f}" in row
    assert "+0.20 ± 0.00" in row  # noise 0.5: +0.2 on every seed
    assert "| `fp32` (F1) | 50.00 / 40.00 |" in text


def test_a_page_holds_one_table_per_recipe_in_its_own_block(tmp_path):
    files = [_write(tmp_path / "seed0_x.json", None, {"dev.spacy": 0.5, "dev_noise0.5.spacy": 0.4}, {})]
    page = tmp_path / "page.md"
    first = f"{mode_f1_seeds.START}\nold\n{mode_f1_seeds.END}"
    page.write_text(f"{first}\n<!-- mode-f1-other:start -->\nold\n<!-- mode-f1-other:end -->\n", encoding="utf8")
    assert mode_f1_seeds.main(["render", str(files[0]), "--page", str(page), "--block", "other"]) == 0
    text = page.read_text(encoding="utf8")
    assert text.startswith(first) and "| `fp32` (F1) | 50.00 / 40.00 |" in text.split("mode-f1-other:start")[1]


def test_a_file_without_its_seed_in_the_name_is_refused(tmp_path):
    path = _write(tmp_path / "scores.json", 0.5, {"dev.spacy": 0.5, "dev_noise0.5.spacy": 0.4}, {})
    with pytest.raises(ValueError, match="seedN"):
        mode_f1_seeds.rows([path])


def test_the_page_and_the_committed_files_agree(tmp_path):
    files = sorted(DATA.glob("*.json"))
    assert files, f"no committed per-seed files in {DATA}"
    assert (
        mode_f1_seeds.main(["render", *map(str, files), "--page", str(REPO / "docs/results/speed.md"), "--check"]) == 0
    )
    shipped = [str(f) for f in sorted(SHIPPED.glob("seed*.json"))]
    speed_md = str(REPO / "docs/results/speed.md")
    assert mode_f1_seeds.main(["render", *shipped, "--page", speed_md, "--block", "both-mild", "--check"]) == 0
    exact = [str(f) for f in sorted(EXACT.glob("seed*.json"))]
    assert mode_f1_seeds.main(["render", *exact, "--page", speed_md, "--block", "exact", "--check"]) == 0
    page = tmp_path / "page.md"
    page.write_text(f"intro\n{mode_f1_seeds.START}\nold\n{mode_f1_seeds.END}\nrest\n", encoding="utf8")
    assert mode_f1_seeds.main(["render", *map(str, files), "--page", str(page), "--check"]) == 1
    assert mode_f1_seeds.main(["render", *map(str, files), "--page", str(page)]) == 0
    assert mode_f1_seeds.main(["render", *map(str, files), "--page", str(page), "--check"]) == 0
    assert page.read_text(encoding="utf8").startswith("intro\n") and page.read_text(encoding="utf8").endswith("rest\n")


SPEED = REPO / "docs" / "results" / "data" / "speed_modes_amx_exact.json"


def test_the_readmes_modes_table_is_the_committed_speed_run_and_seeds():
    files = sorted(EXACT.glob("seed*.json"))
    args = ["modes", *map(str, files), "--speed", str(SPEED), "--page", str(REPO / "README.md"), "--check"]
    assert mode_f1_seeds.main(args) == 0


def test_the_modes_table_puts_each_modes_speed_beside_its_f1_cost(tmp_path):
    """Words/s against the reference from one side-by-side run, the F1 difference over the seeds
    at the given smoothing; a mode the run did not time or the seeds did not score shows "–"."""
    files = [
        _write(
            tmp_path / f"seed{seed}_smoothing_off.json",
            None,
            {"dev.spacy": 0.5, "dev_noise0.5.spacy": 0.4},
            {
                "int8": {"dev.spacy": 0.5 + 0.001 * seed, "dev_noise0.5.spacy": 0.4},
                "onnx-int8": {"dev.spacy": 0.49, "dev_noise0.5.spacy": 0.38},
            },
        )
        for seed in range(3)
    ]
    models = {
        "base": {"relative_to_reference": 1.0},
        "ent": {"relative_to_reference": 0.6},
        "ent@int8": {"relative_to_reference": 0.7},
        "ent@onnx-int8": {"relative_to_reference": 1.05},
    }
    run = {"settings": {"torch_threads": 1, "cpu_int8": ["avx512_vnni"]}}
    run["pipelines"] = {"docs": 500, "reference": "base", "models": models}
    speed = tmp_path / "speed.json"
    speed.write_text(json.dumps(run), encoding="utf8")
    lines = mode_f1_seeds.modes(files, speed, default="int8").splitlines()
    assert lines[2].startswith("| `fp32` | 0.60x | reference | reference |")
    assert lines[3].startswith("| `int8` | 0.70x | +0.10 ± 0.10 | +0.00 ± 0.00 | **the CPU default** (`auto`)")
    assert lines[4].startswith("| `onnx` | – | – | – |")  # neither timed nor scored
    assert lines[5].startswith("| `onnx-mixed` | – | – | – |")
    assert lines[6].startswith("| `onnx-int8` | 1.05x | -1.00 ± 0.00 | -2.00 ± 0.00 |")
    assert sum("CPU default" in line for line in lines) == 1
    assert "CPU int8 features: avx512_vnni" in lines[-1] and "3 trained seeds" in lines[-1]
    speed.write_text(json.dumps({"models": models}), encoding="utf8")
    with pytest.raises(ValueError, match="not a `speed_compare.py --output` file"):
        mode_f1_seeds.modes(files, speed)
