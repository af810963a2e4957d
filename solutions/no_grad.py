import torch


def predict_requires_grad(nodes):
    requires = []
    for node in nodes:
        op = node[0]
        if op == "input":
            requires.append(bool(node[1]))
        elif op == "detach":
            requires.append(False)
        elif node[-1] == "no_grad":
            requires.append(False)
        else:
            requires.append(any(requires[i] for i in node[1:]))
    return requires


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
