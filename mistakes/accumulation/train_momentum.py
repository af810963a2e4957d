"""torch.optim.SGD with momentum where plain SGD is asked.

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
    opt = torch.optim.SGD([w], lr=lr, momentum=0.9)
    grads = []
    for x, y in zip(xs, ys):
        opt.zero_grad()
        ((x @ w - y) ** 2).mean().backward()
        grads.append(w.grad.clone())
        opt.step()
    return w, grads


def microbatch_grad(w, xs, ys):
    k = xs.shape[0]
    for x, y in zip(xs, ys):
        loss = ((x @ w - y) ** 2).mean() / k
        loss.backward()
    return w.grad
