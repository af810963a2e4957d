"""One forward pass, k backward calls through the same graph.

check: test_accumulated_grad
"""

import torch


def accumulated_grad(x, k):
    out = ((x + 2) ** 2).mean()
    for _ in range(k):
        out.backward(retain_graph=True)
    return x.grad


def zeroed_grads(x, scales):
    grads = []
    for c in scales:
        x.grad = None
        out = c * ((x + 2) ** 2).mean()
        out.backward()
        grads.append(x.grad.clone())
    return grads


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
