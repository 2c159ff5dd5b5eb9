"""Write the meta.json that `spacy package --meta-path` uses for en_entangle_wnut.

    python scripts/package_meta.py BASE_META.json OUT.json [--metrics metrics/entangle_dev.json]
                                   [--char-encoder backbones/grown]
                                   [--variant entangle-char --selection meta/selection.json]

BASE_META.json holds the hand-written fields (description, licence, sources). Added here:
  license       an SPDX expression of every licence of what the package holds: the base's,
                each source's (those given as SPDX ids) and the char encoder's (its config.json
                record, e.g. Apache-2.0 for layers copied from MiniLM + MIT for its front end);
                a part of unknown licence is said on the console
  requirements  spacy-entangle with the installed version's minor range (spaCy also
                detects it from the `entangle` factory; naming it here keeps the requirement
                when the plugin is not installed as a distribution, e.g. run from a checkout),
                with the extras the packaged pipeline's inference default needs (--packaged:
                `auto` and the onnx modes need the `onnx` extra, so installing the package by
                name gets the fast path; the plain library install stays without it)
  performance   the `spacy evaluate` scores (replaces the training loop's dev scores in
                model-best/meta.json, which spaCy would otherwise copy)
  char_encoder  how the character encoder was pretrained (`pretrain-chars` writes it into its
                config.json): objectives, teacher, the steps actually run and the planned
                ones, and what stopped it. A run cut short by its time cap is also said in
                the description and on the console: the budget is in steps, so a shorter
                run means a different (weaker) encoder than the project states.
  variant       which variants.yml variant this is (the side NER reads, the training
                augmenter: --model's config.cfg) and why: the figures of `variants.py select`
                (--selection), said in the description, so the model card shows them. A
                variant whose recipe the selection did not choose is shipped with a warning
                in the description and on the console.
Everything else (lang, pipeline, labels, spacy_version) still comes from the model's meta.
"""

import json
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import typer


def plugin_requirement(extras: Sequence[str] = ()) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("spacy-entangle")
    except PackageNotFoundError:  # run from a checkout that is not installed
        import spacy_entangle

        v = spacy_entangle.__version__
    major, minor = v.split(".")[:2]
    named = f"[{','.join(sorted(extras))}]" if extras else ""
    return f"spacy-entangle{named}>={v},<{major}.{int(minor) + 1}.0"


def inference_extras(model: Path) -> List[str]:
    """The spacy-entangle extras the pipeline's `inference` settings predict with: `onnx` for
    `auto` (its CPU mode) and the onnx modes, none for the others."""
    from spacy.util import load_config

    from spacy_entangle.modeling.inference import AUTO_CPU_MODE, ENGINE_MODES

    components = load_config(model / "config.cfg", interpolate=False).get("components", {})
    settings = {block.get("inference", "fp32") for block in components.values() if block.get("factory") == "entangle"}
    engine = set(ENGINE_MODES) | ({"auto"} if AUTO_CPU_MODE in ENGINE_MODES else set())
    return ["onnx"] if settings & engine else []


def char_encoder_record(path: Path) -> dict:
    """The pretraining record of a char encoder directory ({} for one that `pretrain-chars`
    did not make, e.g. the random stand-in, with its note when it has one)."""
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    record = dict(config.get("spacy_entangle_pretraining") or {})
    if config.get("spacy_entangle_note"):
        record["note"] = config["spacy_entangle_note"]
    if config.get("spacy_entangle_licenses"):
        record["licenses"] = config["spacy_entangle_licenses"]
    return record


def license_expression(meta: dict) -> str:
    """Every licence the package holds, as one SPDX expression: the base meta's terms, each
    source's SPDX id (a licence written as prose, e.g. a terms-of-use note, stays in its
    source only) and each part of the char encoder."""
    from spacy_entangle.backbone_dirs.licenses import expression

    terms = [t.strip() for t in str(meta.get("license") or "").split(" AND ") if t.strip()]
    terms += [s["license"] for s in meta.get("sources", []) if s.get("license") and " " not in s["license"].strip()]
    terms += [p["license"] for p in (meta.get("char_encoder") or {}).get("licenses", [])]
    return expression(terms)


def _pct(pair) -> str:
    """ "53.5 ± 1.2" of a recorded [mean, spread]: rounded half up from the recorded decimals
    (0.0115 is 1.2, as the unrounded figure; binary floats would print 1.1)."""
    from decimal import ROUND_HALF_UP, Decimal

    def one(value) -> str:
        return str((Decimal(str(value)) * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))

    mean, spread = pair
    return one(mean) + ("" if spread is None else f" ± {one(spread)}")


def _recipe(variant) -> tuple:
    """What a variant trains (variants.yml), whatever its name: entangle-both-grown and
    entangle-both (char_encoder: default = grown) are one recipe."""
    return (variant.config, variant.component, variant.side, variant.augment, variant.settings)


def trained_augmenter(model: Path) -> Tuple[bool, Optional[dict]]:
    """Whether the pipeline folder has its training config, and the [corpora.train] augmenter
    it was trained with there (None: none)."""
    from thinc.api import Config

    path = model / "config.cfg"
    if not path.exists():
        return False, None
    return True, Config().from_disk(path, interpolate=False).get("corpora", {}).get("train", {}).get("augmenter")


def augmenter_phrase(augmenter: Optional[dict]) -> str:
    """How the description says the training augmenter (empty without one)."""
    if not augmenter:
        return ""
    phrase = ", trained with spacy-entangle's char-noise augmenter"
    if augmenter.get("level") is not None and augmenter.get("rate") is not None:
        phrase += (
            f" ({augmenter.get('@augmenters')}: a share {augmenter['level']} of the training sentences replaced "
            f"by a copy whose words of 4+ characters are attacked with probability {augmenter['rate']})"
        )
    return phrase


def variant_record(
    name: str, char_dir: Optional[Path], selection: dict, trained: Optional[Tuple[bool, Optional[dict]]] = None
) -> Tuple[dict, str]:
    """The shipped variant, the selection's figures, and a sentence for the description:
    which side NER reads, its training augmenter (the trained config's, `trained_augmenter`,
    else variants.yml's `augment`), and why this variant (or a warning when the selection
    chose another recipe: another side, char encoder, augmenter or settings)."""
    from _variants import ENCODER_DIRS, load_variants

    variants = load_variants()
    variant = variants[name]
    known, augmenter = trained or (False, None)
    if not known and variant.augment:  # no trained config to read: the variant's word
        augmenter = {"@augmenters": "spacy-entangle.char_noise_augmenter.v1"}
    rate = selection["noise_rate"]
    encoder = selection["char_encoder"]
    chosen = variants.get(selection["chosen"])
    if chosen is not None:
        same = _recipe(variant) == _recipe(chosen)
    else:  # a choice that left variants.yml: by what the selection recorded of it
        same = variant.side == selection["side"] and variant.augment == bool(selection.get("augment", False))
    same = same and (char_dir is None or char_dir.name == ENCODER_DIRS[encoder])
    rows = selection["candidates"] + ([selection["reference"]] if selection.get("reference") else [])
    rows += selection.get("other_references", [])

    def label(r: dict) -> str:
        return f"{r['name']} at {r['steps']:,} steps" if r.get("steps") else r["name"]

    figures = "; ".join(
        f"{label(r)} {_pct(r['dev_f1'])} clean, {_pct(r[f'dev_f1_noise{rate}'])} at noise {rate} "
        f"({len(r['seeds'])} seeds{', an earlier round' if r.get('from') else ''})"
        for r in rows
    )
    sentence = (
        f"Variant: {name}, NER on {'both sides' if variant.side == 'both' else f'the {variant.side} side'} of the entangle "
        f"component, with the {encoder} character encoder{augmenter_phrase(augmenter)}. "
    )
    if same:
        sentence += (
            f"It was chosen among {', '.join(label(r) for r in selection['candidates'])} for the "
            f"{selection['criterion']} on WNUT-17 dev (entity F1 in %, mean ± sd over seeds: {figures})."
        )
    else:
        augmented = ", with the char-noise augmenter" if selection.get("augment") else ""
        sentence += (
            f"This is NOT the variant the comparison chose ({selection['chosen']}: side {selection['side']}, "
            f"char encoder {encoder}{augmented}; {selection['criterion']}; {figures})."
        )
    record = {
        "name": name,
        "side": variant.side,
        "augmenter": augmenter,
        "chosen_by_selection": same,
        "selection": selection,
    }
    return record, sentence


def main(
    base: Path = typer.Argument(..., help="the hand-written meta fields (description, licence, sources)"),
    output: Path = typer.Argument(..., help="the meta.json for `spacy package --meta-path`"),
    metrics: Optional[Path] = typer.Option(None, "--metrics", help="the `spacy evaluate` scores"),
    char_encoder: Optional[Path] = typer.Option(
        None, "--char-encoder", help="the char_backbone directory the model trained with"
    ),
    variant: Optional[str] = typer.Option(None, "--variant", help="the variants.yml variant being packaged"),
    selection: Optional[Path] = typer.Option(None, "--selection", help="with --variant: `variants.py select`'s JSON"),
    readme: Optional[Path] = typer.Option(
        None, "--readme", help="also write the package's README.md (model card) here"
    ),
    model: Optional[Path] = typer.Option(
        None, "--model", help="the pipeline folder being packaged (its config.cfg: the training augmenter; the card)"
    ),
    version: Optional[str] = typer.Option(None, "--version", help="with --readme: the package version"),
    packaged: Optional[Path] = typer.Option(
        None, "--packaged", help="the pipeline folder `spacy package` packages (its inference default: the extras)"
    ),
) -> None:
    """Write the meta.json that `spacy package --meta-path` uses for en_entangle_wnut."""
    meta = json.loads(base.read_text(encoding="utf-8"))
    reqs = [r for r in meta.get("requirements", []) if not r.startswith("spacy-entangle")]
    # (called as a function, e.g. by the tests, an option left out is typer's OptionInfo)
    extras = inference_extras(packaged) if isinstance(packaged, Path) else []
    meta["requirements"] = [plugin_requirement(extras)] + reqs
    if metrics is not None:
        scores = json.loads(metrics.read_text(encoding="utf-8"))
        meta["performance"] = {k: v for k, v in scores.items() if k.startswith(("ents_", "token_")) or k == "speed"}
    if char_encoder is not None:
        if not (char_encoder / "config.json").exists():
            print(f"✘ {char_encoder}/config.json not found: pass the char encoder directory", file=sys.stderr)
            raise typer.Exit(code=1)
        record = meta["char_encoder"] = char_encoder_record(char_encoder)
        if record.get("stopped_by") == "max_minutes" and record.get("planned_steps"):
            cut = (
                f"Its character encoder was STOPPED BY THE TIME CAP after {record['steps']} of "
                f"{record['planned_steps']} pretraining steps."
            )
            meta["description"] = f"{meta.get('description', '').rstrip()} {cut}".strip()
            print(f"⚠ {cut} (recorded in the package meta)", file=sys.stderr)
    meta["license"] = license_expression(meta)
    if "unknown" in meta["license"].split(" AND "):
        unknown = [p["part"] for p in meta.get("char_encoder", {}).get("licenses", []) if p["license"] == "unknown"]
        print(f"⚠ licence unknown for: {'; '.join(unknown)} (recorded as `unknown` in the meta)", file=sys.stderr)
    if variant is not None:
        if selection is None or not selection.exists():
            print(f"✘ --variant needs --selection, `variants.py select`'s JSON (got {selection})", file=sys.stderr)
            raise typer.Exit(code=1)
        chosen = json.loads(selection.read_text(encoding="utf-8"))
        trained = trained_augmenter(model) if model is not None else None
        meta["variant"], sentence = variant_record(variant, char_encoder, chosen, trained)
        meta["description"] = f"{meta.get('description', '').rstrip()} {sentence}".strip()
        if not meta["variant"]["chosen_by_selection"]:
            print(f"⚠ {sentence}", file=sys.stderr)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"✔ {output}: requirements {meta['requirements']}")
    if readme is not None:
        if model is None or version is None:
            print("✘ --readme needs --model (the pipeline folder) and --version", file=sys.stderr)
            raise typer.Exit(code=1)
        from spacy.cli.package import get_meta

        full = get_meta(model, {**meta, "version": version})  # as `spacy package` builds it
        readme.parent.mkdir(parents=True, exist_ok=True)
        readme.write_text(model_card(full), encoding="utf-8")
        print(f"✔ {readme}: model card with the Hugging Face metadata header")


def hub_license(license: Optional[str]) -> dict:
    """The hub header's licence fields of an SPDX expression ("CC BY 4.0" reads as cc-by-4.0):
    one id, or `other` with every id in license_name."""
    from spacy_entangle.backbone_dirs.licenses import hub_license as fields

    terms = [t.strip().replace(" ", "-") for t in str(license or "").split(" AND ") if t.strip()]
    return fields([(t, t) for t in terms]) if terms else {}


def model_card(meta: dict) -> str:
    """spaCy's README of the package (generate_readme) under the metadata header the Hugging
    Face hub reads (what spacy-huggingface-hub writes): `spacy package` uses a README.md that
    is already in its output folder."""
    import srsly
    from spacy.cli.package import generate_readme

    perf = meta.get("performance") or {}
    header = {
        "tags": ["spacy", "token-classification", "spacy-entangle"],
        "language": [meta["lang"]],
        **hub_license(meta.get("license")),
        "library_name": "spacy",
        "datasets": ["wnut_17"],
        "metrics": ["precision", "recall", "f1"],
        "model-index": [
            {
                "name": f"{meta['lang']}_{meta['name']}",
                "results": [
                    {
                        "task": {"name": "NER", "type": "token-classification"},
                        "dataset": {"name": "WNUT-17 (dev)", "type": "wnut_17", "split": "validation"},
                        "metrics": [
                            {"name": f"NER {name.title()}", "type": name, "value": round(float(perf[f"ents_{key}"]), 4)}
                            for name, key in (("precision", "p"), ("recall", "r"), ("f1", "f"))
                            if perf.get(f"ents_{key}") is not None
                        ],
                    }
                ],
            }
        ]
        if perf
        else [],
    }
    header = {k: v for k, v in header.items() if v}
    return f"---\n{srsly.yaml_dumps(header).strip()}\n---\n\n{generate_readme(meta)}"


if __name__ == "__main__":
    typer.run(main)
