import torch


def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    for _ in range(k - 1):
        loss.backward(retain_graph=True)
    loss.backward()
    return x.grad


def caught_error(x):
    loss = (x ** 3).sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as error:
        return error, x.grad


def two_losses(x, w):
    h = torch.tanh(x * w)
    loss1 = h.sum()
    loss2 = (h ** 2).mean()
    loss1.backward(retain_graph=True)
    first = w.grad.clone()
    loss2.backward()
    return first, w.grad
