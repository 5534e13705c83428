"""The model zoo: loaders for the configurations witprobe certifies (no downloads)."""

from witprobe.models.loaded import LoadedModel
from witprobe.models.zoo import MODELS, ModelSpec, load_model

__all__ = ["MODELS", "LoadedModel", "ModelSpec", "load_model"]
