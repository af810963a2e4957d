"""w.grad saved without clone(), zeroed in place: every entry is the last gradient.

check: test_train_loop
"""

import torch


def accumulated_grad(x, k):
    for _ in range(k):
        out = ((x + 2) ** 2).mean()
        out.backward()
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
        if w.grad is not None:
            w.grad.zero_()
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        grads.append(w.grad)
        with torch.no_grad():
            w -= lr * w.grad
    return w, grads


def microbatch_grad(w, xs, ys):
    k = xs.shape[0]
    for x, y in zip(xs, ys):
        loss = ((x @ w - y) ** 2).mean() / k
        loss.backward()
    return w.grad
