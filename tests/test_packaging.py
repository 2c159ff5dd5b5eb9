"""spacy-entangle builds as a wheel users can install: the configs and the licence inside,
the entry points spaCy reads, and dependencies that are what the library imports."""
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (path,) = out.glob("spacy_entangle-*-py3-none-any.whl")
    return path


def test_wheel_holds_the_configs_licence_and_entry_points(wheel):
    from spacy_entangle.configs import config_names

    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = z.read(info).decode()
        entry_points = z.read(info.replace("METADATA", "entry_points.txt")).decode()
    shipped = {n.rsplit("/", 1)[1] for n in names if n.startswith("spacy_entangle/configs/") and n.endswith(".cfg")}
    assert shipped == set(config_names()) and "ner_cpu.cfg" in shipped
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names)
    for line in ["entangle = spacy_entangle.pipeline.entangle:make_entangle",
                 "spacy-entangle.EntangleModel.v1 = spacy_entangle.architectures:EntangleModel_v1",
                 "spacy-entangle = spacy_entangle.cli:app"]:
        assert line in entry_points
    requires = [line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Requires-Dist: ")]
    core = [r for r in requires if "extra ==" not in r]
    # the library does not import spacy-transformers or weasel: extras, and no transformers cap
    assert not [r for r in core if r.startswith(("spacy-transformers", "weasel"))]
    assert "transformers>=4.30" in core
    assert any(r.startswith("spacy-transformers") and 'extra == "baseline"' in r for r in requires)


def test_the_library_imports_neither_spacy_transformers_nor_weasel():
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "spacy_entangle").rglob("*.py")
                 if any(m in p.read_text(encoding="utf8") for m in ("import spacy_transformers", "from spacy_transformers",
                                                                     "import weasel", "from weasel"))]
    assert offenders == []


def test_shipped_configs_are_found_by_name():
    from spacy_entangle.configs import config_path

    assert config_path("ner_cpu.cfg").read_text(encoding="utf8").startswith("#")
    with pytest.raises(ValueError, match="no shipped config 'nope.cfg'"):
        config_path("nope.cfg")


def _yaml_header(text: str) -> dict:
    import srsly

    assert text.startswith("---\n"), text[:80]
    return srsly.yaml_loads(text.split("---\n")[1])


def test_the_model_card_carries_the_hugging_face_metadata_header():
    """The README that the project's `package` step puts beside the model (package_meta.py)."""
    from package_meta import model_card, plugin_requirement

    import spacy_entangle

    # the model's requirements name the plugin (`pip install --find-links packages/` finds its wheel)
    major, minor = spacy_entangle.__version__.split(".")[:2]
    assert plugin_requirement() == f"spacy-entangle>={spacy_entangle.__version__},<{major}.{int(minor) + 1}.0"

    meta = {"lang": "en", "name": "entangle_wnut", "version": "0.1.0", "license": "CC BY 4.0",
            "performance": {"ents_p": 0.5, "ents_r": 0.4, "ents_f": 0.45}, "spacy_version": ">=3.8",
            "pipeline": ["entangle", "ner"], "components": ["entangle", "ner"], "labels": {"ner": ["person"]}}
    card = model_card(meta)
    header = _yaml_header(card)
    assert header["license"] == "cc-by-4.0" and header["language"] == ["en"] and header["library_name"] == "spacy"
    assert {"spacy", "token-classification", "spacy-entangle"} <= set(header["tags"])
    assert header["datasets"] == ["wnut_17"] and header["metrics"] == ["precision", "recall", "f1"]
    assert header["model-index"][0]["results"][0]["metrics"][2]["value"] == 0.45
    assert "en_entangle_wnut" in card.split("---\n", 2)[2]


def test_a_pretrained_char_encoder_card_carries_the_header(tmp_path):
    """`pretrain-chars` labels its output for the hub: masked-lm (and distillation with a teacher)."""
    from spacy_entangle.modeling.offline import sample_lines
    from spacy_entangle.pretraining import PretrainSettings, pretrain_chars

    text = tmp_path / "t.txt"
    text.write_text("\n".join(sample_lines()[:64]) + "\n", encoding="utf8")
    settings = PretrainSettings(max_steps=1, batch_size=4, lr=1e-3, warmup_steps=0, log_every=1,
                                checkpoint_every=100, noise_rate=0.2)
    pretrain_chars([text], tmp_path / "chars", settings, config="canine-tiny", progress=False)
    header = _yaml_header((tmp_path / "chars" / "README.md").read_text(encoding="utf8"))
    assert header["license"] == "mit" and header["library_name"] == "transformers"
    assert {"spacy-entangle", "canine", "character-level", "masked-lm"} <= set(header["tags"])
    assert "distillation" not in header["tags"]
