from . import (  # noqa: F401
    add_scores,
    annotate,
    convert,
    convert_codeswitch,
    convert_conllu,
    convert_textcat,
    explain,
    init_backbone,
    init_config,
    perturb,
    pretrain_chars,
)
from ._app import app

__all__ = ["app"]
