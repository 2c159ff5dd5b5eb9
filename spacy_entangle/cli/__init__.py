from ._app import app
from . import init_backbone, init_config, explain, convert, perturb, convert_codeswitch, pretrain_chars, convert_conllu, convert_textcat, annotate  # noqa: F401
__all__ = ["app"]
