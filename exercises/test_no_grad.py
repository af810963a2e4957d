import pytest
import torch


pytestmark = pytest.mark.grade(concept="no_grad")

OPS = ("add", "mul", "exp", "detach")


def second_layer_loss(h, W2):
    return ((h @ W2) ** 2).mean()


def td_loss(w, x, target):
    return ((x @ w - target) ** 2).mean()


# -- random graphs for predict_requires_grad ---------------------------------------

def build(nodes):
    tensors = []
    with torch.enable_grad():
        for node in nodes:
            op, args = node[0], [tensors[i] for i in node[1:] if isinstance(i, int) and not isinstance(i, bool)]
            if op == "input":
                tensors.append(torch.ones(2, dtype=torch.float64, requires_grad=node[1]))
                continue
            if op == "detach":
                tensors.append(args[0].detach())
                continue
            with torch.set_grad_enabled(node[-1] != "no_grad"):
                if op == "add":
                    tensors.append(args[0] + args[1])
                elif op == "mul":
                    tensors.append(args[0] * args[1])
                else:
                    tensors.append(torch.exp(args[0]))
    return tensors


def random_graph(rng):
    count = rng.integers(2, 4)
    nodes = [["input", bool(rng.integers(0, 1))] for _ in range(count)]
    nodes[rng.integers(0, count - 1)][1] = True
    for _ in range(rng.integers(3, 6)):
        op = rng.choice(OPS)
        i = rng.integers(0, len(nodes) - 1)
        node = [op, i] if op in ("exp", "detach") else [op, i, rng.integers(0, len(nodes) - 1)]
        if op != "detach" and rng.integers(0, 3) == 0:
            node.append("no_grad")
        nodes.append(node)
    return nodes


def node_name(nodes, k):
    node = nodes[k]
    if node[0] == "input":
        return f"t{k} (input, requires_grad={node[1]})"
    if node[0] == "detach":
        return f"t{k} = t{node[1]}.detach()"
    if node[0] == "exp":
        text = f"t{k} = exp(t{node[1]})"
    else:
        text = f"t{k} = t{node[1]} {'+' if node[0] == 'add' else '*'} t{node[2]}"
    return text + (" under no_grad" if node[-1] == "no_grad" else "")


# -- checks ----------------------------------------------------------------------

@pytest.mark.grade(points=3)
def test_predict_requires_grad(submission, autograd, grade_rng):
    nodes = random_graph(grade_rng)
    expected = [bool(t.requires_grad) for t in build(nodes)]
    got = submission("no_grad").predict_requires_grad(nodes)
    autograd.assert_equal(got, expected, "requires_grad",
                          labels=[f"requires_grad of {node_name(nodes, k)}" for k in range(len(nodes))])


@pytest.mark.grade(points=3)
def test_frozen_features(submission, autograd, grade_rng, grade_device):
    n, d, h, c = (grade_rng.integers(1, 4) for _ in range(4))
    x = grade_rng.randn(n, d)
    W1 = grade_rng.randn(d, h, requires_grad=True)
    W2 = grade_rng.randn(h, c, requires_grad=True)
    result = submission("no_grad").frozen_features(x, W1, W2)
    h_rec, W1_grad, W2_grad = autograd.unpack(result, 3, "the returned (h, W1.grad, W2.grad)")
    hv = torch.tanh(x @ W1.detach())
    with autograd.part(1):
        autograd.assert_meta(h_rec, "h", requires_grad=False, grad_fn=None)
        autograd.assert_close(h_rec, hv, "h")
    with autograd.part(1):
        autograd.assert_equal(W1_grad, None, "W1.grad (W1 is frozen)")
    with autograd.part(1):
        autograd.check_grad(W2_grad, second_layer_loss, (hv, W2), wrt=(1,), names=("W2.grad",),
                            mean_over=n * c)


@pytest.mark.grade(points=3)
def test_td_grad(submission, autograd, grade_rng, grade_device):
    n, d = grade_rng.integers(1, 5), grade_rng.integers(1, 4)
    w = grade_rng.randn(d, requires_grad=True)
    x, x_next = grade_rng.randn(n, d), grade_rng.randn(n, d)
    r = grade_rng.randn(n)
    gamma = float(grade_rng.numpy.uniform(0.5, 0.99))
    result = submission("no_grad").td_grad(w, x, x_next, r, gamma)
    target, grad = autograd.unpack(result, 2, "the returned (target, w.grad)")
    target_value = r + gamma * (x_next @ w.detach())
    with autograd.part(1):
        autograd.assert_meta(target, "target", requires_grad=False, grad_fn=None)
        autograd.assert_close(target, target_value, "target")
    with autograd.part(2):
        autograd.check_grad(grad, td_loss, (w, x, target_value), wrt=(0,), names=("w.grad",), mean_over=n)
