from ._app import app
from . import init_backbone, convert, perturb, convert_codeswitch, pretrain_chars, convert_tweebank, convert_textcat, annotate  # noqa: F401
__all__ = ["app"]
