from ._app import app
from . import init_backbone, convert, perturb, convert_codeswitch  # noqa: F401
__all__ = ["app"]
