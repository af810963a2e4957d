"""The step count from a formula (int() rounds toward zero), then one multiplication.

check: test_loop_grad
expected diagnosis: req.dynamic_graph.loop_graph
"""

import torch


def branch_grad(x):
    if x.sum() > 0:
        loss = (x * x).sum()
    else:
        loss = torch.exp(x).sum()
    loss.backward()
    return loss, x.grad


import math

def loop_grad(x, c, limit):
    steps = int(math.log(limit / float(x.norm())) / math.log(c)) + 1
    y = x * c ** steps
    y.sum().backward()
    return steps, x.grad


def rnn_grad(xs, w, h0):
    h = h0
    for x_t in xs:
        h = torch.tanh(w * h + x_t)
    h.sum().backward()
    return w.grad, h0.grad
