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
    h = torch.tanh(x @ W1)
    h.retain_grad()
    out = h @ W2
    out.retain_grad()
    loss = (out ** 2).mean()
    loss.backward()
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
