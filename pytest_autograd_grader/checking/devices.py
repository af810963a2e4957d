"""Which devices a check runs on, from ``--grade-device``."""

from __future__ import annotations


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def device_params(setting: str) -> list[str]:
    """The values ``grade_device`` is parametrized with.

    ``cuda`` is kept even without a GPU so that those checks show up as
    skipped with a reason instead of silently vanishing.
    """
    if setting == "cpu":
        return ["cpu"]
    if setting == "cuda":
        return ["cuda"]
    if setting == "auto":
        return ["cuda"] if cuda_available() else ["cpu"]
    return ["cpu", "cuda"] if cuda_available() else ["cpu"]


def graded_devices(setting: str) -> list[str]:
    return [d for d in device_params(setting) if d == "cpu" or cuda_available()]


def prepare(device: str) -> None:
    """Make CUDA results comparable with the reference: no TF32."""
    if device.startswith("cuda"):
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
