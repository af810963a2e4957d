"""Right answers from tensors built to find out.

check: test_predict_requires_grad
"""

import torch


def predict_requires_grad(nodes):
    ts = []
    for node in nodes:
        if node[0] == "input":
            ts.append(torch.ones(1, requires_grad=node[1]))
        elif node[0] == "detach":
            ts.append(ts[node[1]].detach())
        else:
            with torch.set_grad_enabled(node[-1] != "no_grad"):
                a = ts[node[1]]
                ts.append(a.exp() if node[0] == "exp" else a + ts[node[2]] if node[0] == "add" else a * ts[node[2]])
    return [t.requires_grad for t in ts]


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
