"""w returned alone, not (w, grads): the student's failure, never the check's error.

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
    for x, y in zip(xs, ys):
        ((x @ w - y) ** 2).mean().backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
    return w


def microbatch_grad(w, xs, ys):
    k = xs.shape[0]
    for x, y in zip(xs, ys):
        loss = ((x @ w - y) ** 2).mean() / k
        loss.backward()
    return w.grad
