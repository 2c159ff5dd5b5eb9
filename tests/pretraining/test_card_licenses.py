"""Every directory spacy-entangle writes names the licences of what it holds (card header,
"Licences" section, config.json record): a grown char encoder carries the licence of the
layers it copied (all-MiniLM-L6-v2: Apache-2.0) beside spacy-entangle's (MIT) for its front end."""

import json

import srsly

from spacy_entangle.backbone_dirs import sample_lines
from spacy_entangle.backbone_dirs.licenses import copied_from, folder_licenses
from spacy_entangle.pretraining import PretrainSettings, pretrain_chars


def _header(folder):
    return srsly.yaml_loads((folder / "README.md").read_text(encoding="utf8").split("---\n")[1])


def test_a_grown_encoder_carries_the_licence_of_its_copied_layers(minilm_dir, tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("\n".join(sample_lines()[:64]) + "\n", encoding="utf8")
    settings = PretrainSettings(
        max_steps=2,
        stage_a_steps=1,
        batch_size=4,
        warmup_steps=0,
        checkpoint_every=100,
        init_from=str(minilm_dir),
        grow_k=1,
        char_width=32,
        type_batch=16,
        dev_fraction=0.05,
    )
    out = tmp_path / "grown"
    pretrain_chars([text], out, settings, progress=False)
    header = _header(out)
    assert header["license"] == "other" and header["license_name"] == "apache-2.0-and-mit"  # not `mit` alone
    card = (out / "README.md").read_text(encoding="utf8")
    assert f"- the first 1 layer(s) copied from {minilm_dir}: Apache-2.0" in card
    assert "- the character front end and join layer, trained by spacy-entangle: MIT" in card
    record = json.loads((out / "config.json").read_text(encoding="utf8"))["spacy_entangle_licenses"]
    assert [r["license"] for r in record] == ["Apache-2.0", "MIT"]
    assert folder_licenses(str(out)) == ["Apache-2.0", "MIT"]  # what the package meta reads


def test_a_canine_pretrained_from_random_weights_is_mit_alone(canine_dir, tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("\n".join(sample_lines()[:64]) + "\n", encoding="utf8")
    settings = PretrainSettings(max_steps=1, batch_size=4, warmup_steps=0, checkpoint_every=100)
    for name, config in (("preset", "canine-tiny"), ("from-dir", str(canine_dir))):
        pretrain_chars([text], tmp_path / name, settings, config=config, progress=False)
        assert _header(tmp_path / name)["license"] == "mit", name
    assert f"the starting weights, from {canine_dir}: MIT" in (tmp_path / "from-dir" / "README.md").read_text()


def test_licences_are_read_from_a_card_and_an_unknown_one_is_said(tmp_path):
    """A folder the hub wrote (a card header, no record) and one that says nothing."""
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "README.md").write_text("---\nlicense: apache-2.0\ntags: [x]\n---\n\n# A model\n")
    assert folder_licenses(str(tmp_path / "hub")) == ["Apache-2.0"]
    assert folder_licenses(str(tmp_path / "nothing")) == []
    assert copied_from("layers copied from", "some/hub-name") == [
        ("layers copied from some/hub-name (no licence found)", "unknown")
    ]
