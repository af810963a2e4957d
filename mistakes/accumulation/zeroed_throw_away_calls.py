"""The right values and the right number of backward calls, all but one on throw-away graphs.

check: test_zeroed_grads
"""

import torch


def accumulated_grad(x, k):
    for _ in range(k):
        out = ((x + 2) ** 2).mean()
        out.backward()
    return x.grad


def zeroed_grads(x, scales):
    ((x + 2) ** 2).mean().backward()
    g = x.grad.clone()
    for _ in scales[1:]:
        torch.ones(1, requires_grad=True).sum().backward()
    return [c * g for c in scales]


def train_loop(w, xs, ys, lr):
    grads = []
    for x, y in zip(xs, ys):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        grads.append(w.grad.clone())
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
    return w, grads


def microbatch_grad(w, xs, ys):
    k = xs.shape[0]
    for x, y in zip(xs, ys):
        loss = ((x @ w - y) ** 2).mean() / k
        loss.backward()
    return w.grad
