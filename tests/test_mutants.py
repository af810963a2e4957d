"""Generated mutants (audit/mutants.py, audit/operators.py): what a course author's audit grades."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("libcst")

from pytest_autograd_grader.audit.mutants import Mutant, MutantsError, mutants_of  # noqa: E402
from pytest_autograd_grader.audit.operators import OPERATORS  # noqa: E402
from pytest_autograd_grader.i18n.en import EN  # noqa: E402
from pytest_autograd_grader.i18n.zh import ZH  # noqa: E402

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"
AUTOGRAD_OPERATORS = {
    "drop_retain_graph",
    "drop_create_graph",
    "drop_retain_grad",
    "drop_zero_grad",
    "drop_no_grad",
    "drop_detach",
    "drop_clone",
    "drop_requires_grad",
    "swap_sum_mean",
    "swap_saved",
}


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _made(source: str, operator: str) -> list[str]:
    """The bodies of ``f`` in the mutants ``operator`` makes of ``source``."""
    return [m.source for m in mutants_of(_src(source), "topic") if m.operator == operator]


# One row per operator: a small module, and every mutant source it must give, formatting kept.
CASES = [
    (
        "drop_retain_graph",
        """
        def f(y):
            # twice
            y.backward(retain_graph=True)

            y.backward()
        """,
        [
            """
        def f(y):
            # twice
            y.backward()

            y.backward()
        """
        ],
    ),
    (
        "drop_create_graph",
        """
        def f(y, x):
            (g,) = torch.autograd.grad(y, x, create_graph=True, allow_unused=True)
            return g
        """,
        [
            """
        def f(y, x):
            (g,) = torch.autograd.grad(y, x, allow_unused=True)
            return g
        """
        ],
    ),
    (
        "drop_retain_grad",
        """
        def f(x):
            a = x * 2
            a.retain_grad()  # keep it
            return a
        """,
        [
            """
        def f(x):
            a = x * 2
            return a
        """
        ],
    ),
    (
        "drop_zero_grad",
        """
        def f(w, opt):
            w.grad = None
            w.grad.zero_()
            opt.zero_grad()
            w.grad = w.grad * 2
        """,
        [
            """
        def f(w, opt):
            w.grad.zero_()
            opt.zero_grad()
            w.grad = w.grad * 2
        """,
            """
        def f(w, opt):
            w.grad = None
            opt.zero_grad()
            w.grad = w.grad * 2
        """,
            """
        def f(w, opt):
            w.grad = None
            w.grad.zero_()
            w.grad = w.grad * 2
        """,
        ],
    ),
    (
        "drop_no_grad",
        """
        def f(w, lr):
            # the update
            with torch.no_grad():
                # not recorded
                w -= lr * w.grad

                w.grad = None
            return w
        """,
        [
            """
        def f(w, lr):
            # the update
            # not recorded
            w -= lr * w.grad

            w.grad = None
            return w
        """
        ],
    ),
    (
        "drop_no_grad",
        """
        def f(x):
            with torch.enable_grad():
                return x * 2
        """,
        [
            """
        def f(x):
            return x * 2
        """
        ],
    ),
    (
        "drop_detach",
        """
        def f(x):
            return (x.detach()).exp()
        """,
        [
            """
        def f(x):
            return (x).exp()
        """
        ],
    ),
    (
        "drop_clone",
        """
        def f(x, out):
            out.append(x.grad.clone())
        """,
        [
            """
        def f(x, out):
            out.append(x.grad)
        """
        ],
    ),
    (
        "drop_requires_grad",
        """
        def f(d, w):
            a = d.requires_grad_(True)
            b = torch.ones(3, requires_grad=True)
            w.requires_grad = True
            return a, b
        """,
        [
            """
        def f(d, w):
            a = d
            b = torch.ones(3, requires_grad=True)
            w.requires_grad = True
            return a, b
        """,
            """
        def f(d, w):
            a = d.requires_grad_(True)
            b = torch.ones(3)
            w.requires_grad = True
            return a, b
        """,
            """
        def f(d, w):
            a = d.requires_grad_(True)
            b = torch.ones(3, requires_grad=True)
            return a, b
        """,
        ],
    ),
    (
        "swap_sum_mean",
        """
        def f(x):
            return torch.sum(x) + x.mean(dim=0)
        """,
        [
            """
        def f(x):
            return torch.mean(x) + x.mean(dim=0)
        """,
            """
        def f(x):
            return torch.sum(x) + x.sum(dim=0)
        """,
        ],
    ),
    (
        "swap_saved",
        """
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y, x * y)
        """,
        [
            """
        def forward(ctx, x, y):
            ctx.save_for_backward(y, x, x * y)
        """,
            """
        def forward(ctx, x, y):
            ctx.save_for_backward(x, x * y, y)
        """,
        ],
    ),
    (
        "drop_factor",
        """
        def f(x, w):
            return (2 * w) / x
        """,
        [
            """
        def f(x, w):
            return (2 * w)
        """,
            """
        def f(x, w):
            return w / x
        """,
        ],
    ),
    (
        "drop_term",
        """
        def f(x, w):
            return x + w - 1
        """,
        [
            """
        def f(x, w):
            return x + w
        """,
            """
        def f(x, w):
            return x - 1
        """,
            """
        def f(x, w):
            return w - 1
        """,
        ],
    ),
    (
        "drop_power",
        """
        def f(x, y):
            return ((x - y) ** 2).mean() + x ** 0.5
        """,
        [
            """
        def f(x, y):
            return (x - y).mean() + x ** 0.5
        """,
            """
        def f(x, y):
            return ((x - y) ** 2).mean() + x
        """,
        ],
    ),
    (
        "swap_args",
        """
        def f(a, b, c):
            torch.sub(a, b.x)
            torch.where(a > 0, b, c)
            print(a, b), torch.add(a, b), torch.mul(a, b)
            g(a, 1)
        """,
        [
            """
        def f(a, b, c):
            torch.sub(b.x, a)
            torch.where(a > 0, b, c)
            print(a, b), torch.add(a, b), torch.mul(a, b)
            g(a, 1)
        """,
            """
        def f(a, b, c):
            torch.sub(a, b.x)
            torch.where(a > 0, c, b)
            print(a, b), torch.add(a, b), torch.mul(a, b)
            g(a, 1)
        """,
        ],
    ),
    (
        "swap_returned",
        """
        def f(a, b, c):
            return a, b, c
        """,
        [
            """
        def f(a, b, c):
            return b, a, c
        """,
            """
        def f(a, b, c):
            return a, c, b
        """,
        ],
    ),
    (
        "swap_operands",
        """
        def f(q, t, x, W):
            return (q - t) / 2 + x @ W
        """,
        [
            """
        def f(q, t, x, W):
            return (t - q) / 2 + x @ W
        """,
            """
        def f(q, t, x, W):
            return (q - t) / 2 + W @ x
        """,
        ],
    ),
    (
        "drop_minus",
        """
        def f(g):
            return -g, -1
        """,
        [
            """
        def f(g):
            return g, -1
        """
        ],
    ),
    (
        "swap_sign",
        """
        def f(w, d):
            w -= d
            return w + d
        """,
        [
            """
        def f(w, d):
            w += d
            return w + d
        """,
            """
        def f(w, d):
            w -= d
            return w - d
        """,
        ],
    ),
    (
        "swap_mul_div",
        """
        def f(g, a):
            return g * a, a * a, 2 * a
        """,
        [
            """
        def f(g, a):
            return g / a, a * a, 2 * a
        """
        ],
    ),
    (
        "swap_comparison",
        """
        def f(x, n):
            return 0 < x <= n, x == n, x is n
        """,
        [
            """
        def f(x, n):
            return 0 <= x <= n, x == n, x is n
        """,
            """
        def f(x, n):
            return 0 < x < n, x == n, x is n
        """,
            """
        def f(x, n):
            return 0 < x <= n, x != n, x is n
        """,
        ],
    ),
    (
        "swap_and_or",
        """
        def f(a, b):
            return a and b
        """,
        [
            """
        def f(a, b):
            return a or b
        """
        ],
    ),
    (
        "flip_bool",
        """
        def f(y):
            y.backward(retain_graph=True)
            return True
        """,
        [
            """
        def f(y):
            y.backward(retain_graph=True)
            return False
        """
        ],
    ),
    (
        "off_by_one",
        """
        def f(x, a):
            return (x + 2) ** 2, x.sum(dim=0), a[0], torch.zeros(3), x > 0, 1.5 * x
        """,
        [
            """
        def f(x, a):
            return (x + 3) ** 2, x.sum(dim=0), a[0], torch.zeros(3), x > 0, 1.5 * x
        """,
            """
        def f(x, a):
            return (x + 2) ** 3, x.sum(dim=0), a[0], torch.zeros(3), x > 0, 1.5 * x
        """,
            """
        def f(x, a):
            return (x + 2) ** 2, x.sum(dim=1), a[0], torch.zeros(3), x > 0, 1.5 * x
        """,
            """
        def f(x, a):
            return (x + 2) ** 2, x.sum(dim=0), a[0], torch.zeros(3), x > 0, 2.5 * x
        """,
        ],
    ),
    (
        "range_off_by_one",
        """
        def f(n):
            for _ in range(n - 1):
                pass
        """,
        [
            """
        def f(n):
            for _ in range((n - 1) - 1):
                pass
        """,
            """
        def f(n):
            for _ in range(1, n - 1):
                pass
        """,
        ],
    ),
    (
        "return_none",
        """
        def f(x):
            if x:
                return x
            return x + 1


        class C:
            def m(self):
                return 1
        """,
        [
            """
        def f(x):
            if x:
                return x
            return None


        class C:
            def m(self):
                return 1
        """
        ],
    ),
]


def test_every_operator_has_a_case():
    assert {name for name, _, _ in CASES} == set(OPERATORS)


@pytest.mark.parametrize("operator, source, expected", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_operator_makes_exactly_these_mutants_with_formatting_kept(operator, source, expected):
    assert _made(source, operator) == [_src(text) for text in expected]


def test_a_dropped_only_statement_becomes_pass():
    made = _made(
        """
        def f(xs):
            for x in xs:
                x.retain_grad()
            return xs
        """,
        "drop_retain_grad",
    )
    assert made == [
        _src("""
        def f(xs):
            for x in xs:
                pass
            return xs
        """)
    ]


def test_docstrings_imports_annotations_decorators_raises_and_main_are_never_mutated():
    source = _src('''
        """Module docstring 1 + 2."""
        import torch
        from math import pi as PI


        @functools.lru_cache(maxsize=2 * 64)
        def f(x: "torch.Tensor" = 1 + 2) -> tuple[int, 1 + 1]:
            """Docstring: x * 2 and x.sum()."""
            import numpy as np
            raise NotImplementedError("write f: x * 2")


        if __name__ == "__main__":
            print(f(1 * 2).sum(), True)
        ''')
    assert mutants_of(source, "topic") == []


def test_each_mutant_changes_one_place_and_says_where_and_what():
    source = _src("""
        import torch


        def grads(x, k):
            for _ in range(k):
                loss = (x * x).sum()
                loss.backward(retain_graph=True)
            return x.grad
        """)
    [mutant] = [m for m in mutants_of(source, "accum", "solutions/accum.py") if m.operator == "drop_retain_graph"]
    assert isinstance(mutant, Mutant)
    assert (mutant.module, mutant.function, mutant.line) == ("accum", "grads", 7)
    assert mutant.description == "retain_graph=True dropped from loss.backward(...)"
    assert mutant.id.startswith("accum.grads:drop_retain_graph:") and len(mutant.id.rsplit(":", 1)[1]) == 8
    assert mutant.diff == (
        "--- solutions/accum.py\n+++ mutant\n@@ -5,4 +5,4 @@\n"
        "     for _ in range(k):\n         loss = (x * x).sum()\n"
        "-        loss.backward(retain_graph=True)\n+        loss.backward()\n"
        "     return x.grad\n"
    )


def test_descriptions_name_the_code_changed():
    source = _src("""
        def f(d, w, y, x):
            a = (d * 2).requires_grad_(True)
            w.requires_grad = True
            with torch.no_grad():
                w -= x
            y.sum().backward()
            return a.detach()
        """)
    said = {m.description for m in mutants_of(source, "t")}
    assert {
        "(d * 2).requires_grad_(True) lost its requires_grad (no gradient is recorded)",
        "w lost its requires_grad (no gradient is recorded)",
        "with torch.no_grad(): removed, its body kept (the update is recorded in the graph)",
        "y.sum() replaced by y.mean() (sum and mean swapped)",
        "a.detach() replaced by a (not detached from the graph)",
        "w -= x replaced by w += x (a wrong sign)",
    } <= said


def test_methods_are_named_by_class_and_descriptions_are_one_line_in_both_languages():
    source = (SOLUTIONS / "custom_function.py").read_text()
    mutants = mutants_of(source, "custom_function")
    assert {m.function for m in mutants} >= {"Swish.forward", "Swish.backward", "Hypot.backward"}
    assert all(m.description and "\n" not in m.description for m in mutants)
    for name, operator in OPERATORS.items():
        assert f"audit.op.{name}" in EN and f"audit.op.{name}" in ZH
        assert operator.name == name and operator.doc and "\n" not in operator.doc


def test_ids_survive_edits_of_other_functions_and_differ_between_mutants():
    before = _src("""
        def a(x):
            return (x * 2).sum()


        def b(x, y):
            return x - y
        """)
    after = _src("""
        # a comment and a new function shift every line
        def helper():
            pass


        def a(x):
            return (x * 2).sum()


        def b(x, y):
            return x + y - 1
        """)
    ids_before = [m.id for m in mutants_of(before, "t")]
    ids_after = [m.id for m in mutants_of(after, "t")]
    a_before = [i for i in ids_before if i.startswith("t.a:")]
    assert a_before and a_before == [i for i in ids_after if i.startswith("t.a:")]
    assert len(set(ids_before)) == len(ids_before)
    # b's own edit changes the ids of b's mutants, except where the mutant itself is the same function
    assert [i for i in ids_before if i.startswith("t.b:") and i not in ids_after] != []
    assert [i for i in ids_before if i.startswith("t.b:") and i in ids_after] == [
        i for i in ids_before if i.startswith("t.b:return_none:")
    ]


def test_same_source_same_mutants_and_no_two_alike():
    source = (SOLUTIONS / "accumulation.py").read_text()
    first, second = mutants_of(source, "accumulation"), mutants_of(source, "accumulation")
    assert first == second
    sources = [m.source for m in first]
    assert len(set(sources)) == len(sources) and source not in sources


def test_windows_line_ends_tabs_and_a_byte_order_mark_are_kept_or_skipped():
    crlf = "def f(x):\r\n    y = x * 2\r\n    return y.sum()"
    assert mutants_of(crlf, "t")[0].source == "def f(x):\r\n    y = x\r\n    return y.sum()"
    assert mutants_of("def f(x):\n\ty = x * 2\n", "t")[0].source == "def f(x):\n\ty = x\n"
    assert mutants_of("\ufeffdef f(x):\n    return x.sum()\n", "t")[0].source == "def f(x):\n    return None\n"


def test_unparsable_source_is_a_clear_error():
    with pytest.raises(MutantsError) as error:
        mutants_of("def f(x):\n    return x +\n", "leaf", "solutions/leaf.py")
    assert "solutions/leaf.py" in str(error.value) and "line 2" in str(error.value)
    assert "fix the solution" in str(error.value)


def test_code_python_runs_but_too_deep_for_libcst_is_a_clear_error():
    with pytest.raises(MutantsError, match="leaf.py is nested too deeply to be mutated; split"):
        mutants_of("def f(x):\n    return x" + " + x" * 1200 + "\n", "leaf")


def test_a_match_statement_is_mutated_with_its_lines():
    source = _src("""
        def f(x):
            match x:
                case [a, b]:
                    return a - b
            return x
        """)
    assert [(m.operator, m.line) for m in mutants_of(source, "t")] == [
        ("drop_term", 4),
        ("swap_operands", 4),
        ("swap_sign", 4),
        ("return_none", 5),
    ]


@pytest.mark.parametrize("path", sorted(SOLUTIONS.glob("*.py")), ids=lambda p: p.stem)
def test_shipped_solutions_give_a_sane_number_of_compiling_mutants(path):
    source = path.read_text()
    mutants = mutants_of(source, path.stem, f"solutions/{path.name}")
    assert 10 <= len(mutants) <= 200
    assert {m.operator for m in mutants} & AUTOGRAD_OPERATORS
    for mutant in mutants:
        compile(mutant.source, mutant.id, "exec")
        assert mutant.diff.startswith(f"--- solutions/{path.name}\n+++ mutant\n")
        assert mutant.id.startswith(f"{path.stem}.{mutant.function}:{mutant.operator}:")
