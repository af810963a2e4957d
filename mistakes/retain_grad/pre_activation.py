"""retain_grad() on the pre-activation x @ W1 instead of h.

check: test_hidden_grads
expected diagnosis: diag.retain_grad.other_tensor
"""

import torch


def intermediate_grads(x, w, v):
    a = torch.add(x, w)
    a.retain_grad()
    b = torch.add(w, 1)
    b.retain_grad()
    y = torch.mul(a, b)
    y.retain_grad()
    loss = (v * y).sum()
    loss.backward()
    return a, b, y


def hidden_grads(x, W1, W2):
    z = x @ W1
    z.retain_grad()
    h = torch.tanh(z)
    out = h @ W2
    out.retain_grad()
    (out ** 2).mean().backward()
    return h, out


def chain_grads(x, c):
    zs = []
    z = x
    for k in range(c.shape[0]):
        z = torch.tanh(c[k] * z)
        z.retain_grad()
        zs.append(z)
    z.sum().backward()
    return zs
