"""no_grad ignored.

check: test_predict_requires_grad
"""

import torch


def predict_requires_grad(nodes):
    out = []
    for node in nodes:
        inputs = [out[i] for i in node[1:] if type(i) is int]
        if node[0] == "input":
            out.append(bool(node[1]))
        elif node[0] == "detach":
            out.append(False)
        else:
            out.append(any(inputs))
    return out


def frozen_features(x, W1, W2):
    with torch.no_grad():
        h = torch.tanh(x @ W1)
    out = h @ W2
    loss = (out ** 2).mean()
    loss.backward()
    return h, W1.grad, W2.grad


def td_grad(w, x, x_next, r, gamma):
    q = x @ w
    target = (r + gamma * (x_next @ w)).detach()
    loss = ((q - target) ** 2).mean()
    loss.backward()
    return target, w.grad
