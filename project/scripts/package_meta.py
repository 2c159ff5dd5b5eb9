"""Write the meta.json that `spacy package --meta-path` uses for en_entangle_wnut.

    python scripts/package_meta.py BASE_META.json OUT.json [--metrics metrics/entangle_dev.json]
                                   [--char-encoder backbones/canine-masked]

BASE_META.json holds the hand-written fields (description, licence, sources). Added here:
  requirements  spacy-entangle with the installed version's minor range (spaCy also
                detects it from the `entangle` factory; naming it here keeps the requirement
                when the plugin is not installed as a distribution, e.g. run from a checkout)
  performance   the `spacy evaluate` scores (replaces the training loop's dev scores in
                model-best/meta.json, which spaCy would otherwise copy)
  char_encoder  how the character encoder was pretrained (`pretrain-chars` writes it into its
                config.json): objectives, teacher, the steps actually run and the planned
                ones, and what stopped it. A run cut short by its time cap is also said in
                the description and on the console: the budget is in steps, so a shorter
                run means a different (weaker) encoder than the project states.
Everything else (lang, pipeline, labels, spacy_version) still comes from the model's meta.
"""

import argparse
import json
import sys
from pathlib import Path


def plugin_requirement() -> str:
    try:
        from importlib.metadata import version

        v = version("spacy-entangle")
    except Exception:
        import spacy_entangle

        v = spacy_entangle.__version__
    major, minor = v.split(".")[:2]
    return f"spacy-entangle>={v},<{major}.{int(minor) + 1}.0"


def char_encoder_record(path: Path) -> dict:
    """The pretraining record of a char encoder directory ({} for one that `pretrain-chars`
    did not make, e.g. the random stand-in, with its note when it has one)."""
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    record = dict(config.get("spacy_entangle_pretraining") or {})
    if config.get("spacy_entangle_note"):
        record["note"] = config["spacy_entangle_note"]
    return record


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base", type=Path)
    p.add_argument("output", type=Path)
    p.add_argument("--metrics", type=Path, default=None)
    p.add_argument("--char-encoder", type=Path, default=None, help="the char_backbone directory the model trained with")
    p.add_argument("--readme", type=Path, default=None, help="also write the package's README.md (model card) here")
    p.add_argument("--model", type=Path, default=None, help="with --readme: the pipeline folder being packaged")
    p.add_argument("--version", default=None, help="with --readme: the package version")
    args = p.parse_args(argv)
    meta = json.loads(args.base.read_text(encoding="utf-8"))
    reqs = [r for r in meta.get("requirements", []) if not r.startswith("spacy-entangle")]
    meta["requirements"] = [plugin_requirement()] + reqs
    if args.metrics is not None:
        scores = json.loads(args.metrics.read_text(encoding="utf-8"))
        meta["performance"] = {k: v for k, v in scores.items() if k.startswith(("ents_", "token_")) or k == "speed"}
    if args.char_encoder is not None:
        if not (args.char_encoder / "config.json").exists():
            print(f"✘ {args.char_encoder}/config.json not found: pass the char encoder directory", file=sys.stderr)
            return 1
        record = meta["char_encoder"] = char_encoder_record(args.char_encoder)
        if record.get("stopped_by") == "max_minutes" and record.get("planned_steps"):
            cut = (
                f"Its character encoder was STOPPED BY THE TIME CAP after {record['steps']} of "
                f"{record['planned_steps']} pretraining steps."
            )
            meta["description"] = f"{meta.get('description', '').rstrip()} {cut}".strip()
            print(f"⚠ {cut} (recorded in the package meta)", file=sys.stderr)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"✔ {args.output}: requirements {meta['requirements']}")
    if args.readme is not None:
        if args.model is None or args.version is None:
            print("✘ --readme needs --model (the pipeline folder) and --version", file=sys.stderr)
            return 1
        from spacy.cli.package import get_meta

        full = get_meta(args.model, {**meta, "version": args.version})  # as `spacy package` builds it
        args.readme.parent.mkdir(parents=True, exist_ok=True)
        args.readme.write_text(model_card(full), encoding="utf-8")
        print(f"✔ {args.readme}: model card with the Hugging Face metadata header")
    return 0


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
        "license": str(meta.get("license", "")).lower().replace(" ", "-") or None,
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
    sys.exit(main())
