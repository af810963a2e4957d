import pytest
import torch

pytestmark = pytest.mark.grade(concept="retain_grad")


def weighted_product(a, b, v):
    return (v * a * b).sum()


def weighted(y, v):
    return (v * y).sum()


def second_layer_loss(h, W2):
    return ((h @ W2) ** 2).mean()


def mean_square(out):
    return (out ** 2).mean()


@pytest.mark.grade(points=3)
def test_intermediate_grads(submission, autograd, grade_rng, grade_device):
    shape = grade_rng.shape(ndim=grade_rng.integers(1, 2))
    x = grade_rng.randn(*shape, requires_grad=True)
    w = grade_rng.randn(*shape, requires_grad=True)
    v = grade_rng.randn(*shape)
    result = submission("retain_grad").intermediate_grads(x, w, v)
    a, b, y = autograd.unpack(result, 3, "the returned (a, b, y)")
    av, bv = x.detach() + w.detach(), w.detach() + 1
    for record, name, value in ((a, "a", av), (b, "b", bv), (y, "y", av * bv)):
        autograd.assert_close(record, value, name)
    autograd.check_grad((a.grad, b.grad), weighted_product, (av, bv, v), wrt=(0, 1), names=("a.grad", "b.grad"),
                        holders=(a, b), role="intermediate")
    autograd.check_grad(y.grad, weighted, (av * bv, v), wrt=(0,), names=("y.grad",), holders=(y,),
                        role="intermediate")


@pytest.mark.grade(points=3)
def test_hidden_grads(submission, autograd, grade_rng, grade_device):
    n, d, h, c = (grade_rng.integers(1, 4) for _ in range(4))
    x = grade_rng.randn(n, d)
    W1 = grade_rng.randn(d, h, requires_grad=True)
    W2 = grade_rng.randn(h, c, requires_grad=True)
    result = submission("retain_grad").hidden_grads(x, W1, W2)
    h_rec, out_rec = autograd.unpack(result, 2, "the returned (h, out)")
    hv = torch.tanh(x @ W1.detach())
    outv = hv @ W2.detach()
    autograd.assert_close(h_rec, hv, "h")
    autograd.assert_close(out_rec, outv, "out")
    autograd.check_grad(h_rec.grad, second_layer_loss, (hv, W2), wrt=(0,), names=("h.grad",), holders=(h_rec,),
                        role="intermediate", mean_over=outv.numel())
    autograd.check_grad(out_rec.grad, mean_square, (outv,), names=("out.grad",), holders=(out_rec,),
                        role="intermediate", mean_over=outv.numel())


@pytest.mark.grade(points=3)
def test_chain_grads(submission, autograd, grade_rng, grade_device):
    shape = grade_rng.shape(ndim=grade_rng.integers(1, 2))
    steps = grade_rng.integers(1, 5)
    x = grade_rng.randn(*shape, requires_grad=True)
    c = grade_rng.randn(steps)
    result = submission("retain_grad").chain_grads(x, c)
    names = tuple(f"z_{k}" for k in range(1, steps + 1))
    records = autograd.unpack(result, len(names), "the returned (" + ", ".join(names) + ")")

    def tail(k):
        def loss_from(z):
            for j in range(k, steps):
                z = torch.tanh(c[j] * z)
            return z.sum()
        return loss_from

    z = x.detach()
    for k, (record, name) in enumerate(zip(records, names), start=1):
        z = torch.tanh(c[k - 1] * z)
        autograd.assert_close(record, z, name)
        autograd.check_grad(record.grad, tail(k), (z,), names=(f"{name}.grad",), holders=(record,),
                            role="intermediate")
