"""Saved without clone(), zeroed in place after each pass: every entry is zero.

check: test_zeroed_grads
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
        (c * ((x + 2) ** 2).mean()).backward()
        grads.append(x.grad)
        x.grad.zero_()
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
