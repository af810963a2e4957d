"""The hook negates the gradient but forgets the factor s.

expected diagnosis: diag.hooks.unscaled
"""

import torch


def reversed_grad(x: torch.Tensor, s: float) -> torch.Tensor:
    x.register_hook(lambda g: -g)
    (x * torch.sin(x)).sum().backward()
    return x.grad
