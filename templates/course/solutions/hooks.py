"""Reference solution of the gradient hooks topic."""

import torch


def reversed_grad(x: torch.Tensor, s: float) -> torch.Tensor:
    x.register_hook(lambda g: -s * g)
    (x * torch.sin(x)).sum().backward()
    return x.grad
