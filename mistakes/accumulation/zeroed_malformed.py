"""The last gradient returned, not the list of them: the student's failure, never the check's error.

check: test_zeroed_grads
"""

import torch


def accumulated_grad(x, k):
    for _ in range(k):
        out = ((x + 2) ** 2).mean()
        out.backward()
    return x.grad


def zeroed_grads(x, scales):
    (scales[0] * ((x + 2) ** 2).mean()).backward()
    for c in scales[1:]:
        x.grad = None
        (c * ((x + 2) ** 2).mean()).backward()
    return x.grad


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
