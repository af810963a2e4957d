"""Every sentence the grader says to a student or an instructor.

Code refers to messages by id and fills in named fields; a second language is
a second dict with the same keys, chosen with ``set_language``.
"""

from __future__ import annotations

EN: dict[str, str] = {
    # -- usage errors (instructor) -----------------------------------------
    "usage.submission_missing": "--grade-submission: the directory {path!r} does not exist; pass the folder that holds the student's modules",
    "usage.submission_not_dir": "--grade-submission: {path!r} is a file, not a directory; pass the folder that holds the student's modules",
    "usage.seed": "--grade-seed: {value!r} is not a seed; use a whole number such as 1234, or 'random'",
    "usage.report_dir": "{option}: cannot write {path!r} because the directory {directory!r} does not exist; create it or choose another path",
    "usage.report_unwritable": "{option}: cannot write {path!r}: the directory {directory!r} is not writable",
    "usage.report_is_dir": "{option}: {path!r} is a directory; give a file name such as {path}/report.json",
    "usage.fail_under": "--grade-fail-under: {value!r} is not a percentage; use a number from 0 to 100",
    "usage.timeout": "--grade-timeout: {value!r} is not a number of seconds; use a positive number such as 10",
    "usage.device": "--grade-device: {value!r} is not a device; use cpu, cuda, auto or all",
    "usage.student_config": "--grade-submission: pytest read its configuration from {inifile!r}, inside the submission directory {path!r}, so the student's files would configure the grading; write --grade-submission={path} (with '=') and pass your own configuration with -c",
    "usage.submission_collected": "--grade-submission: the submission {path!r} lies in the test path {tests!r}, so pytest would collect the student's conftest.py and test files; pass only the directory of your checks as test paths, e.g. pytest --grade checks/ --grade-submission={path}",
    "usage.lang": "--grade-lang: {value!r} is not a language the grader speaks; use en or zh",
    "usage.isolation": "--grade-isolation: {value!r} is not a mode; use auto, bwrap, user or process",
    "usage.isolation_unavailable": "--grade-isolation {mode}: {problem}",
    "usage.answer_limit": "--grade-answer-limit: {value!r} is not a size in megabytes; use a positive number such as 8",
    "usage.memory": "--grade-memory: {value!r} is not a size in megabytes; use a positive whole number such as 4096",
    # -- marker problems (instructor) --------------------------------------
    "marker.no_concept": "{where}: this check has no concept; add @pytest.mark.grade(concept=...) with one of: {known}",
    "marker.unknown_concept": "{where}: unknown concept {concept!r}; use one of: {known} (or add it with the pytest_grade_concepts hook)",
    "marker.bad_points": "{where}: points must be a positive number, got {points!r}",
    "marker.bad_hidden": "{where}: hidden must be True or False, got {hidden!r}",
    "marker.positional": "{where}: use keyword arguments, as in @pytest.mark.grade(concept='leaf', points=2)",
    "collect.error": "could not load the checks in {path} ({cause}); none of them were graded:\n{detail}",
    # -- report lines ------------------------------------------------------
    "feedback.hidden": "A hidden check on '{title}' failed.",
    "feedback.header": "[{title}] {what}",
    "feedback.did_not_finish": "the check did not finish",
    "header": "grade: seed {seed} (reproduce with --grade-seed {seed}), device {device}, submission {submission}, isolation {isolation}",
    "header.missing": "grade: not protected: {what}",
    "report.isolation": "grade: student code ran with isolation {mode}",
    "header.fix": "grade: to protect it: {fix}",
    "header.reason": "grade: stronger isolation was not available: {reason}",
    # -- isolation (instructor) --------------------------------------------
    "isolation.inline": "--grade-inline runs student code inside pytest itself; never use it on code you do not trust",
    "isolation.needs_linux": "{what} needs Linux",
    "isolation.no_bwrap": "bubblewrap is not installed (apt-get install bubblewrap)",
    "isolation.bwrap_failed": "bubblewrap could not start a sandbox here ({detail}); inside Docker, allow user namespaces or use --grade-isolation user as root",
    "isolation.user_needs_root": "workers can drop to a uid of their own only when the grader runs as root",
    "isolation.unreadable": "the grader runs as root and student code runs as an unprivileged user, who cannot enter {path}; make it readable by others (chmod o+rx {path}) or install Python where every user can read it",
    "isolation.missing.read": "student code can read every file other users may read: keep hidden checks in a directory only root can read (chmod 700)",
    "isolation.missing.network": "student code can use the network",
    "isolation.missing.own_user": "student code runs as your own user: it can read and write your files (checks and reports included) and signal your processes",
    "isolation.fix.bwrap": "install bubblewrap (apt-get install bubblewrap) for a private filesystem and no network",
    "isolation.fix.process": "install bubblewrap (apt-get install bubblewrap), or run the grader as root for --grade-isolation user",
    "summary.title": "grade",
    "summary.total": "TOTAL",
    "summary.passed": "{passed}/{checks} passed",
    "summary.at_or_above": "at or above",
    "summary.below": "below",
    "header.beside_checks": "beside each checks file",
    "feedback.process_died": "the process running this check died",
    "summary.json": "report written to {path}",
    "summary.fail_under": "total {percent:.1f}% is {relation} the required {required:.1f}%",
    "summary.errors": "{count} check(s) are broken (status error); ask your instructor:",
    # -- blame and report files ----------------------------------------------
    "blame.malformed": "your answer does not have the form this check expects ({error})",
    "blame.redacted": "<text from the student's code>",
    "report.write_failed": "{option}: could not write {path}: {reason}",
    "report.reason.is_dir": "it is a directory",
    "report.reason.no_dir": "the directory {directory} does not exist",
    "report.reason.not_dir": "{directory} is not a directory",
    "report.reason.denied": "permission denied",
    # -- the student's side ------------------------------------------------
    "student.module_missing": "could not find {module}.py in {directory}: create it (start from the exercise file) and keep that file name",
    "student.syntax_error": "{file} has a syntax error at line {line}: {message}\n    {code}",
    "student.import_error": "{module}.py could not be loaded: {type}: {message}{where}",
    "student.not_implemented": "not implemented yet: {module}.{function}",
    "student.no_function": "{module}.py has no function {function!r}; keep the names of the exercise file",
    "student.raised": "{module}.{function} raised {type}: {message}{where}",
    "student.where": " (at {file}:{line}: {code})",
    "student.bad_argument": "this check passes {type} to the student's function, which cannot cross to the student's code; pass tensors, numbers, strings, containers or module-level functions (check author: fix the check)",
    "student.lambda": "this check passes {name} to the student's function, but only module-level functions can be passed by name (check author: define it at module level)",
    "student.timeout": "{module}.{function} did not finish within {seconds:g} s: look for a loop that never ends",
    "student.crashed": "the process running {module}.{function} died ({how}) while running your code",
    "student.exit": "{module}.{function} called sys.exit({code}); return a value instead of exiting",
    "student.interrupt": "{module}.{function} raised KeyboardInterrupt; remove it from your code",
    "student.memory": "{module}.{function} ran out of memory (limit {limit} MB): avoid building huge tensors",
    "student.submission_too_large": "the submission folder holds more than {files} files or {mb} MB; the grader copies it for your code to run, so remove large or generated files from it",
    "student.answer_too_large": "{module}.{function} returned {size:.1f} MB of data; at most {limit:g} MB is accepted: return smaller values",
    "student.output": "\nwhat your code printed:\n{output}",
    # -- answers the grader refuses (records.Limits); {reason} is a limit.* text,
    # and none of these repeats text from the student's code
    "student.unreadable": "the answer of {module}.{function} could not be read: {reason}",
    "limit.max_bytes": "it is {measured} bytes long; at most {limit} bytes are accepted",
    "limit.max_header": "its JSON part is {measured} bytes long; at most {limit} bytes are accepted",
    "limit.header_length": "it announces {measured} bytes of JSON but holds only {limit}",
    "limit.max_items": "it holds at least {measured} values; at most {limit} are accepted (return fewer values)",
    "limit.max_depth": "it is nested at least {measured} levels deep; at most {limit} levels are accepted",
    "limit.max_string": "it holds a text of {measured} characters; at most {limit} are accepted",
    "limit.max_dims": "it holds a tensor with {measured} dimensions; at most {limit} are accepted",
    "limit.dim_size": "it holds a tensor with a dimension of size {measured}; sizes from 0 to {limit} are accepted",
    "limit.dtype": "it holds a tensor of a dtype the grader does not compare (it accepts {dtypes})",
    "limit.device": "it holds a tensor on a device other than cpu or cuda (a meta tensor, say, which holds no values); return tensors on the device they came from",
    "limit.tensor_bytes": "it holds a tensor that declares {measured} bytes where its shape and dtype need {needed}",
    "limit.tensor_past_end": "it holds a tensor of {measured} bytes where only {limit} bytes are left",
    "limit.trailing": "it holds {measured} bytes after its last tensor",
    "limit.field_type": "its field {field} has type {type}",
    "limit.not_record": "it holds a {type} where a record belongs",
    "limit.unknown_record": "it holds a record of an unknown kind",
    "limit.dict_keys": "it holds a dict with {measured} keys for {limit} values",
    "limit.malformed": "it is not in the grader's format ({problem})",
    # how an error PyTorch never raised came about (cmp.error_forged's {how})
    "cmp.forged_never_raised": "never raised",
    "cmp.forged_student": "raised by your own code",
    "cmp.forged_quoted": "made from your own text",
    # -- comparisons -------------------------------------------------------
    "cmp.mismatch": "{what}: values differ from torch.autograd",
    "cmp.expected": "  expected {desc}",
    "cmp.produced": "  produced {desc}",
    "cmp.largest": "  largest difference {diff:.3g} at index {index} (tolerance: rtol {rtol:g}, atol {atol:g})",
    "cmp.not_tensor": "{what}: expected a tensor, got {got}",
    "cmp.none": "{what}: expected a gradient, got None",
    "cmp.shape": "{what}: expected shape {expected}, got shape {got}",
    "cmp.dtype": "{what}: expected dtype {expected}, got {got}",
    "cmp.device": "{what}: expected a tensor on {expected}, got one on {got}; keep tensors on the device they came from",
    "cmp.nonfinite": "{what}: contains {kind} values",
    "cmp.count": "{what}: expected {expected} values, got {got}",
    "cmp.container": "{what}: expected {expected}, got {got}",
    "cmp.value": "{what}: expected {expected!r}, got {got!r}",
    "cmp.value_kind": "{what}: expected {expected}, got {got}",
    "kind.bool": "True or False (a bool)",
    "kind.int": "a whole number (an int)",
    "kind.float": "a number (a float)",
    "kind.str": "a string",
    "kind.value": "{kind}: {value}",
    "kind.error": "the error {type}: {message}",
    "kind.nan": "NaN",
    "kind.infinite": "infinite",
    "kind.object": "a {type} ({repr})",
    "kind.tensor": "a tensor of shape {shape}",
    "kind.other": "a {type}",
    "kind.sequence": "a tuple or list of {n} values",
    "cmp.gradients": "gradients",
    "cmp.gradient_n": "gradient {n}",
    "cmp.meta": "{what}: expected {field} = {expected!r}, got {got!r}",
    "cmp.no_error": "{what}: expected PyTorch's error '{text}', but no error was raised",
    "cmp.wrong_error": "{what}: expected PyTorch's error '{text}', got {type}: {message}",
    "cmp.not_error": "{what}: expected the caught error '{text}', got {got}",
    "cmp.error_forged": "{what}: this {type} was {how}, not by PyTorch; make the mistake really happen and return the exception PyTorch raises",
    "cmp.gradcheck": "{what}: gradcheck failed: the backward does not agree with finite differences of the forward\n{detail}",
    "cmp.parts": "{passed:g} of {total:g} parts right",
    "cmp.credit": "partial credit: {fraction:.0%} of the points",
    # -- diagnoses ---------------------------------------------------------
    "diag.multiple": "Likely mistake: the gradient is {k} times too large. .grad adds up over backward calls: zero it (x.grad = None or optimizer.zero_grad()) before each backward.",
    "diag.multiple_calls": "Likely mistake: the gradient is {k} times too large, and your code called backward {calls} times: .grad adds up over backward calls. Zero it (x.grad = None or optimizer.zero_grad()) before each backward, or call backward once.",
    "diag.mean_sum": "Likely mistake: the gradient is {k} times too large, and {k} is the number of elements averaged: you used a sum where a mean was asked (or dropped the 1/N).",
    "diag.fraction": "Likely mistake: the gradient is 1/{k} of the expected one. Accumulation was asked for: do not zero .grad between the {k} backward calls.",
    "diag.running_sum": "Likely mistake: the gradient of step {step} is the sum of the gradients of steps 1 to {step}: .grad was never cleared. Zero it (w.grad = None or optimizer.zero_grad()) before each backward.",
    "diag.factor": "Likely mistake: the gradient is {k} times too large after a single backward, so a constant factor in your derivative is off: check each local derivative in the chain rule.",
    "diag.mean_twice": "Likely mistake: the gradient is 1/{k} of the expected one, and {k} is the number of elements averaged: the mean's 1/N was applied twice, or a mean was used where a sum was asked.",
    "diag.too_small": "Likely mistake: the gradient is 1/{k} of the expected one. A tensor used more than once needs the gradients of all its uses added up: accumulate with += instead of assigning with = (and do not zero .grad between backward calls whose gradients should add up).",
    "diag.ones": "Likely mistake: this is the vector-Jacobian product with a vector of ones. Pass the given gradient (grad_tensors / gradient=v) instead of calling .sum() or using torch.ones_like.",
    "diag.sign": "Likely mistake: the sign is flipped; check the direction of a subtraction in your chain rule.",
    "diag.transpose": "Likely mistake: the gradient is transposed; for y = x @ W, dL/dx = g @ W.T and dL/dW = x.T @ g.",
    "diag.none_leaf": "Likely mistake: this leaf has no gradient. It was not part of the graph that backward ran through: make it with requires_grad=True and use it in the computation before calling backward.",
    "diag.none_not_leaf": "Likely mistake: this tensor was made by an operation (it has grad_fn {grad_fn}), so it is not a leaf and does not keep .grad. Create parameters directly, e.g. torch.randn(..., requires_grad=True), or move them with .to() before setting requires_grad.",
    "diag.none_intermediate": "Likely mistake: an intermediate tensor keeps its gradient only if you call .retain_grad() on it before backward.",
    "diag.no_create_graph": "Likely mistake: the second derivative is missing. Pass create_graph=True to torch.autograd.grad (or backward) so the first gradient is itself differentiable.",
    "diag.second_zero": "Likely mistake: the second derivative is zero everywhere: the first gradient was detached from the graph. Compute it with create_graph=True.",
    "diag.requires_grad": "Likely mistake: the tensor has no graph. It was made under torch.no_grad(), after .detach(), .item() or a numpy round trip, or from a leaf without requires_grad=True.",
    "diag.backward_twice": "Likely mistake: the graph's saved tensors were freed by the first backward. Pass retain_graph=True to every backward except the last.",
    "diag.inplace_leaf": "Likely mistake: a leaf that requires grad was changed in place. Do parameter updates inside `with torch.no_grad():`.",
    "diag.inplace_saved": "Likely mistake: a tensor that backward needs was changed in place. Use an out-of-place operation (y = y * 2 instead of y *= 2) or clone it first.",
    "diag.implicit_grad": "Likely mistake: backward on a non-scalar needs a gradient argument: y.backward(gradient=v) or torch.autograd.backward(y, grad_tensors=v).",
    "diag.shape_mismatch": "Likely mistake: the gradient passed to backward must have the shape of the output it belongs to.",
    "diag.int_requires_grad": "Likely mistake: only floating point tensors can require gradients; make it with dtype=torch.float32 or float64.",
    "diag.nonleaf_requires_grad": "Likely mistake: requires_grad can only be set on leaves; set it where the tensor is created.",
    "diag.unused_input": "Likely mistake: an input was not used to compute the output; pass allow_unused=True or leave it out of inputs.",
    "diag.broadcast": "Likely mistake: the gradient has the broadcast shape {got} instead of the parameter's shape {expected}; sum over the broadcast axes in backward.",
    "diag.nonleaf_grad_kept": "Likely mistake: intermediate nodes still hold .grad after backward; only leaves should keep their gradient.",
    "diag.gradcheck_float32": "Likely mistake: gradcheck needs float64 inputs; float32 finite differences are too coarse.",
    # -- concept titles (concepts.BUILTIN_CONCEPTS) --------------------------
    "concept.graph": "Computational graphs",
    "concept.leaf": "Leaf tensors",
    "concept.retain_grad": "Gradients of intermediates",
    "concept.dynamic_graph": "Dynamic graphs",
    "concept.retain_graph": "Backward twice",
    "concept.vector_backward": "Backward of non-scalars",
    "concept.accumulation": "Gradient accumulation",
    "concept.inplace": "In-place operations",
    "concept.no_grad": "Turning gradients off",
    "concept.higher_order": "Higher-order gradients",
    "concept.custom_function": "Custom autograd Functions",
    "concept.engine": "Your own autograd engine",
    # -- topics graph, leaf, retain_grad: their checks' requirements and diagnoses
    "req.graph.by_hand": "hand_gradients must find the gradients by hand with the chain rule, but your code called backward() or torch.autograd.grad {count} time(s). Write dy/dw and dy/dx as formulas in x and w (the docstring derives them) and compute them with tensor arithmetic.",
    "req.graph.use_autograd": "autograd_gradients must let autograd compute the gradients, but your code called neither L.backward() nor torch.autograd.grad. Build L from x and w and call L.backward(): then w.grad and x.grad hold the gradients.",
    "req.graph.y_from_a_b": "build_graph must compute y from the a and b it returns (y = a * b), but your code made {adds} additions where 2 are needed (x + w and w + 1, once each): it looks like y was computed from new copies of x + w and w + 1, and then its graph does not go through the a and b you returned.",
    "req.graph.read_grad_fn": "grad_fn_names must build a = x + w, b = w + 1 and y = a * b and read each name from the tensor's grad_fn (type(t.grad_fn).__name__), not write the names out: your code built {nodes} graph node(s) and read grad_fn {reads} time(s).",
    "diag.graph.not_recorded": "Likely mistake: {what} has no grad_fn, so it is not part of the graph. x and w require grad: compute a, b and y from them with torch operations. Values made with .detach(), .data, .item(), .numpy(), torch.tensor(...) or under torch.no_grad() are not recorded.",
    "diag.graph.order": "Likely mistake: the values are right but in the wrong places: return them in the order {expected}.",
    "diag.graph.one_path": "Likely mistake: dy/dw follows only one path from y to w. w reaches y twice, through a = x + w and through b = w + 1, and the two paths add up: dy/dw = dy/da * da/dw + dy/db * db/dw = b + a = 2w + x + 1.",
    "diag.graph.local_swap": "Likely mistake: dy/dx came out as a = x + w, but the derivative of a product a * b with respect to a is the other factor: dy/da = b, so dy/dx = dy/da * da/dx = b = w + 1.",
    "diag.graph.sign_some": "Likely mistake: the absolute values are right but the sign is wrong for {count} of {total} elements (those where the expected value is {where}): the derivative is the same formula for every element; look for abs(), relu or a condition on the sign in your code.",
    "diag.graph.none_type": "Likely mistake: {count} of the names are 'NoneType': those tensors have grad_fn None because nothing recorded how they were made. x and w already require grad, so a, b and y computed from them directly get a grad_fn; do not use .detach(), .data or torch.no_grad() here.",
    "diag.graph.repr": "Likely mistake: these are the printed forms of the grad_fn objects (str(t.grad_fn)); return only the class name: type(t.grad_fn).__name__ (or t.grad_fn.name()).",
    "diag.graph.sum_not_mean": "Likely mistake: the gradients are 1/{k} of the expected ones, and {k} is the number of elements: the loss is a sum (.sum()), but you took a mean (.mean()).",
    "diag.graph.returned_inputs": "Likely mistake: you returned the tensors {names} themselves; return their gradients {grads}, which backward filled in.",
    "req.leaf.no_tensors": "predict_leaves must predict from the node list alone, without building tensors, but your code called torch {count} time(s) (first: {first}). Reason with the rules instead: every tensor you create is a leaf; an operation gives a non-leaf when any of its inputs requires grad; backward stores .grad only in leaves that require grad and that the loss depends on.",
    "leaf.graph_nodes": "(graph: nodes = {nodes})",
    "diag.leaf.no_backward": "Likely mistake: your code never called backward, so nothing filled in .grad: call backward on the loss before returning.",
    "diag.leaf.grad_not_stored": "Likely mistake: torch.autograd.grad returns the gradients but does not store them in .grad; this task reads .grad, so call loss.backward() instead.",
    "diag.leaf.detached_copy": "Likely mistake: {what} is a detached copy (it does not require grad, as after .detach() or .data), not the tensor itself. Return the tensors your computation used: a copy has its own is_leaf, grad_fn and .grad.",
    "diag.leaf.made_copy": "Likely mistake: {what} was made by an operation ({grad_fn}), so it is a new tensor (a copy such as .clone(), or a result computed again), not the tensor itself. Return the tensors your computation used: a copy has its own is_leaf, grad_fn and .grad.",
    "diag.leaf.scale_first": "Likely mistake: w was made by an operation ({grad_fn}) on a tensor that already required grad, so w is not a leaf and backward leaves its .grad empty. Do the arithmetic first and ask for gradients last: w = (data * scale).requires_grad_().",
    "diag.leaf.created_leaf": "Likely mistake: every tensor you create is a leaf, whether it requires grad or not ({names}).",
    "diag.leaf.op_without_grad": "Likely mistake: an operation none of whose inputs requires grad records nothing, so its result is a leaf, with requires_grad=False ({names}).",
    "diag.leaf.any_input": "Likely mistake: an operation with one input that requires grad and one that does not is still recorded: one such input is enough, so its result requires grad and is not a leaf ({names}).",
    "diag.leaf.recorded_op": "Likely mistake: an operation on tensors that require grad is recorded (its result gets a grad_fn), so its result is not a leaf ({names}).",
    "diag.leaf.no_requires_grad": "Likely mistake: backward never stores a gradient in a tensor that does not require grad, leaf or not ({names}).",
    "diag.leaf.unreached": "Likely mistake: a leaf that requires grad but that the loss does not depend on (no chain of operations leads from it to the last tensor) is never reached by backward, so its .grad stays None ({names}).",
    "diag.leaf.reached": "Likely mistake: a leaf that requires grad and that the loss depends on (the last tensor itself included) gets its gradient in .grad ({names}).",
    "diag.leaf.bools": "Likely mistake: write True and False, not 1 and 0: is_leaf and has_grad are lists of bools.",
    "diag.retain_grad.too_late": "Likely mistake: retain_grad() was called after backward. The gradient of an intermediate tensor exists only while backward runs: call {what}.retain_grad() right after computing {what}, before loss.backward().",
    "diag.retain_grad.cloned": "Likely mistake: your code calls retain_grad(), but the tensor returned for {what} was made by {grad_fn} (a copy such as .clone(), or a result computed again), not the tensor you retained; a copy does not carry the original's .grad. Return the retained tensor itself.",
    "diag.retain_grad.detached": "Likely mistake: your code calls retain_grad(), but the tensor returned for {what} is a detached copy (.detach() or .data), not the tensor you retained; a copy does not carry the original's .grad. Return the retained tensor itself.",
    "diag.retain_grad.weights": "Likely mistake: these are the gradients of y.sum(), without the weights v. The loss is (v * y).sum(), so dloss/dy = v: multiply by v before summing.",
    # -- topics dynamic_graph, retain_graph, vector_backward
    # dynamic_graph: requirements and diagnoses
    "req.dynamic_graph.loop_graph": "loop_grad must build y step by step inside the while loop, one y = y * c per step on the tensor that requires grad, so that the graph has one multiplication per step; here the loop runs {steps} times, but your code made {muls} multiplication(s) that were recorded. Do not count the steps first and then compute x * c ** steps, and do not run the loop on a detached copy or under torch.no_grad().",
    "diag.dynamic_graph.no_backward": "Likely mistake: your code never called backward, so x.grad (or any leaf's .grad) is still None; torch.autograd.grad returns gradients but does not store them in .grad. Call backward on the loss before returning the gradient.",
    "diag.dynamic_graph.wrong_branch": "Likely mistake: this is the result of the other branch. Here x.sum() = {total:.4g}, so loss = {branch}: decide once for the whole tensor, on x.sum() > 0, not on x[0], x.max(), x.min() or another value, and check which branch goes with which condition.",
    "diag.dynamic_graph.sum_zero": "Likely mistake: here x.sum() is exactly 0, and 0 > 0 is False, so the otherwise branch applies: loss = torch.exp(x).sum(). Test x.sum() > 0, not x.sum() >= 0.",
    "diag.dynamic_graph.per_element": "Likely mistake: each element took its own branch (as with torch.where(x > 0, ...) or a loop over the elements). The task branches once for the whole tensor, on x.sum() > 0: here x.sum() = {total:.4g}, so every element goes through {branch}.",
    "diag.dynamic_graph.loop_zero": "Likely mistake: x.norm() = {norm:.6g} is already at least limit = {limit:.6g}, so the loop body must not run at all: steps = 0 and y = x. Test the condition before the first multiplication (while y.norm() < limit: ...), not after it, and do not round a formula up.",
    "diag.dynamic_graph.loop_boundary": "Likely mistake: after {steps} step(s) y.norm() equals limit = {limit:.6g} exactly, and the loop runs only while y.norm() < limit, so it stops there; your count ({got}) went on: it tests <= instead of <, or multiplies before testing.",
    "diag.dynamic_graph.loop_off_by_one": "Likely mistake: the step count is off by one ({got} instead of {expected}): start from steps = 0, add 1 after each y = y * c, and test y.norm() < limit on the current y before each multiplication.",
    "diag.dynamic_graph.grad_follows_steps": "Likely mistake: x.grad is c ** {steps}, right for the {steps} step(s) your loop made: fix the step count and the gradient follows.",
    "diag.dynamic_graph.backward_in_loop": "Likely mistake: your code called backward {calls} times, and every call adds into x.grad. Run the whole loop first, then call y.sum().backward() once on the final y.",
    "diag.dynamic_graph.rnn_detached": "Likely mistake: your code detaches h inside the loop (truncated backpropagation through time): the graph is cut between steps, so backward goes back one step only; w.grad holds only the last step's share and h0 gets no gradient. Keep h attached: h = torch.tanh(w * h + x_t).",
    "diag.dynamic_graph.rnn_no_grad": "Likely mistake: part of your loop ran under torch.no_grad(), so those steps were not recorded: backward stops where recording started again, h0 gets no gradient and w only the recorded steps' share. Run every step with gradients on.",
    "diag.dynamic_graph.rnn_empty": "Likely mistake: this is the gradient of h0.sum(): your loop made no step at all for this sequence of T = {steps} row(s). Apply the step to every row of xs, also when there is only one: for x_t in xs.",
    "diag.dynamic_graph.rnn_prefix": "Likely mistake: this is the gradient of a loop over the first {m} row(s) of xs only, but xs has T = {steps} rows here. The length changes from call to call: loop over xs itself (for x_t in xs), not over a fixed or shortened range.",
    "diag.dynamic_graph.rnn_skip_first": "Likely mistake: this is the gradient of a loop that skips the first row of xs. Start from h = h0 and apply the step to every row, x_0 included: for x_t in xs.",
    "diag.dynamic_graph.rnn_reversed": "Likely mistake: this is the gradient of a loop over the rows of xs in reverse order. Go through xs from x_0 to the last row: for x_t in xs.",
    "diag.dynamic_graph.rnn_dot": "Likely mistake: this is the gradient of a dot product w @ h; the step multiplies element by element: h = torch.tanh(w * h + x_t).",
    # retain_graph: requirements and diagnoses
    "req.retain_graph.build_once": "backward_k_times must build L once and call backward on that same L {k} times, but your code built the graph {built} times (L was computed again before a backward call). Build L = (x * torch.exp(x)).sum() before the loop and pass retain_graph=True to every backward call but the last.",
    "req.retain_graph.k_calls": "backward_k_times must call backward {k} times on L and let x.grad add the results up, but your code made {calls} backward (or torch.autograd.grad) call(s). Multiplying one gradient by k gives the same numbers without what this exercise is about.",
    "diag.retain_graph.call_count": "Likely mistake: your code called backward {calls} time(s), and x.grad holds the sum of those {calls} gradient(s); the task asks for k = {k} calls: for _ in range(k - 1): L.backward(retain_graph=True), then L.backward().",
    "diag.retain_graph.kept_graph": "Likely mistake: your first backward passed retain_graph=True, so the graph was kept and the second backward ran without error (and added its gradient into x.grad a second time). Call the first L.backward() without retain_graph: then the second one fails, and that error is the one to catch.",
    "diag.retain_graph.rebuilt": "Likely mistake: your second backward ran on a newly built L (the graph was built {built} times), whose saved tensors were fresh, so nothing failed. Call backward twice on the same L.",
    "diag.retain_graph.one_backward": "Likely mistake: your code called backward only once, so there was no error to catch. Call L.backward() a second time, inside try: ... except RuntimeError as error: ...",
    "diag.retain_graph.not_caught": "Likely mistake: the second backward raised the expected error, but your function let it escape. Catch it (try: L.backward() except RuntimeError as error: ...) and return (error, x.grad).",
    "diag.retain_graph.swapped": "Likely mistake: the two values are in the wrong order: return {order}.",
    "req.retain_graph.h_once": "two_losses must build h = torch.tanh(x * w) once and let both losses share it, but your code computed tanh {built} times. With h built once, L2.backward() goes through the part of the graph that L1.backward() already used, which is why L1.backward() needs retain_graph=True.",
    "req.retain_graph.two_calls": "two_losses must call backward once per loss, L1.backward(retain_graph=True) and then L2.backward(), but your code made {calls} backward (or torch.autograd.grad) call(s).",
    "diag.retain_graph.no_clone": "Likely mistake: grad_after_L1 holds both gradients: you kept w.grad itself, not a copy, and the second backward adds into that same tensor in place. Save a copy right after L1.backward(): first = w.grad.clone().",
    "diag.retain_graph.copied_late": "Likely mistake: grad_after_L1 holds both gradients: the copy was made after L2.backward(). Copy w.grad right after L1.backward(), before L2.backward().",
    "diag.retain_graph.zeroed_between": "Likely mistake: w.grad at the end holds only L2's gradient: it was cleared after L1.backward() (w.grad = None or w.grad.zero_()). Leave it: the second backward adds L2's gradient to L1's, and that sum is what is asked for.",
    "diag.retain_graph.l2_sum": "Likely mistake: L2's share is {k} times too large: L2 is the mean of h ** 2 over its {k} elements, (h ** 2).mean(), not the sum.",
    "diag.retain_graph.l1_twice": "Likely mistake: w.grad at the end holds L1's gradient twice: your code backpropagated L1 a second time (for example (L1 + L2).backward() after L1.backward()). After L1.backward(retain_graph=True), backpropagate L2 alone: L2.backward().",
    # vector_backward: requirements and diagnoses
    "req.vector_backward.build_once": "jacobian_rows must compute L = x @ Y once and backpropagate every e_j through that same L, keeping its graph with retain_graph=True, but your code computed the matrix product {built} times.",
    "req.vector_backward.rows_calls": "jacobian_rows must find each row with a backward call of its own, L.backward(gradient=e_j, retain_graph=True): {m} calls for {m} rows, but your code made {calls} backward (or torch.autograd.grad) call(s). Reading the rows off Y (Y.T) gives the numbers without what this exercise is about.",
    "diag.vector_backward.rows_not_zeroed": "Likely mistake: row j holds the sum of rows 0 to j: x.grad was not cleared between the rows, and every backward adds into it. After copying x.grad, zero it (x.grad.zero_() or x.grad = None) before the next backward.",
    "diag.vector_backward.rows_zero": "Likely mistake: every row is zero: you kept x.grad itself, not a copy, and then zeroed it in place, which zeroed the rows you had kept too. Keep a copy: rows.append(x.grad.clone()).",
    "diag.vector_backward.rows_alias": "Likely mistake: every row equals the sum of all the rows: you kept x.grad itself, not a copy, {m} times, and every backward added into that one tensor. Keep a copy (x.grad.clone()) and zero x.grad before the next row.",
    "diag.vector_backward.rows_ones": "Likely mistake: every row is the vector-Jacobian product with a vector of ones (the gradient of L.sum()), which is the sum of all the rows. Row j needs the one-hot e_j: zeros of L's shape with a 1 at [0, j].",
    "diag.vector_backward.stacked": "Likely mistake: the rows were stacked into shape {got}; join the {m} rows, each of shape (1, n), with torch.cat(rows) to get shape (m, n).",
    "req.vector_backward.vjp_one_call": "vjp_matmul must get both gradients from a single backward call that passes v, L.backward(gradient=v), but your code made {calls} backward (or torch.autograd.grad) call(s). (Computing v @ Y.T and x.T @ v by hand gives the numbers without what this exercise is about.)",
    "req.vector_backward.weighted_one_call": "weighted_losses must backpropagate both losses with a single call, torch.autograd.backward([L1, L2], grad_tensors=[weights[0], weights[1]]), but your code made {calls} backward (or torch.autograd.grad) call(s).",
    "diag.vector_backward.sum_not_v": "Likely mistake: this is the vector-Jacobian product with a vector of ones: your backward call passed no gradient, which is what L.sum().backward() computes. Pass v itself: L.backward(gradient=v).",
    "diag.vector_backward.ones_not_v": "Likely mistake: this is the vector-Jacobian product with a vector of ones: the gradient you passed holds ones instead of v. Pass v itself: L.backward(gradient=v).",
    "diag.vector_backward.scaled_v": "Likely mistake: both gradients are {k:.4g} times the right ones after a single backward call: the gradient you passed is {k:.4g} * v instead of v. Pass v itself: L.backward(gradient=v).",
    "diag.vector_backward.unweighted": "Likely mistake: this is the gradient of L1 + L2, each loss with weight 1: the weights were left out (a sum, or backward without grad_tensors). Pass them: torch.autograd.backward([L1, L2], grad_tensors=[weights[0], weights[1]]).",
    "diag.vector_backward.weights_swapped": "Likely mistake: this is the gradient of weights[1] * L1 + weights[0] * L2: the weights are swapped. grad_tensors pairs with the tensors in order: [L1, L2] with [weights[0], weights[1]].",
    "diag.vector_backward.weights_twice": "Likely mistake: each loss got its weight twice (weights[0] ** 2 * L1 + weights[1] ** 2 * L2): you multiplied the losses by the weights and also passed the weights as grad_tensors. Do one or the other.",
    "diag.vector_backward.l1_sum": "Likely mistake: L1's share is {k} times too large: L1 is the mean over the {k} rows of x, ((x @ w) ** 2).mean(), not the sum.",
    # -- topics accumulation, inplace, no_grad
    "req.accumulation.backward_count": "{what}: your code called backward {calls} time(s); the task asks for exactly {k} backward calls, one after each forward pass, so that .grad adds the {k} gradients up by itself. (torch.autograd.grad does not count: it returns gradients without adding them to .grad.)",
    "req.accumulation.backward_per_pass": "{what}: your code called backward {calls} time(s); the task asks for one out.backward() per pass, {k} in all, each followed by a copy of x.grad. (torch.autograd.grad returns gradients without touching .grad, and .grad is what this task is about.)",
    "req.accumulation.fresh_forward": "{what}: build the graph anew before every backward call (a fresh forward pass each time); your code called backward again on a graph it had already used (retain_graph=True). The task is about separate passes adding up in .grad.",
    "diag.accumulation.saved_grad_alias": "Likely mistake: you saved {name}.grad itself, not a copy. It is one tensor that backward keeps adding into (and that zero_() clears in place), so every saved entry shows its latest value. Save {name}.grad.clone() instead.",
    "diag.accumulation.zero_none": "Likely mistake: {name}.grad is None until the first backward, so {name}.grad.zero_() fails there. Clear it with {name}.grad = None instead, or zero it only when it is not None.",
    "diag.accumulation.failed_after_update": "{what}: your code stopped with an error after updating {name} once; the grader ran a single step to see why.",
    "diag.accumulation.out_of_place_update": "Likely mistake: `{name} = {name} - lr * {name}.grad` made a new tensor (grad_fn {grad_fn}) instead of updating {name}. The new tensor is not a leaf, so backward gives it no .grad and the next step finds {name}.grad = None. Update the tensor you were given in place, with gradients off: `with torch.no_grad(): {name} -= lr * {name}.grad`.",
    "diag.accumulation.rebound_no_grad": "Likely mistake: under torch.no_grad(), `{name} = {name} - lr * {name}.grad` made a new tensor that does not require grad, so the next loss has no graph to backward through. Change {name} in place instead: `{name} -= lr * {name}.grad`.",
    "diag.accumulation.microbatch_no_divide": "Likely mistake: the gradient is {k} times too large: divide each micro-batch's loss by k = {k} before its backward, so that the {k} gradients add up to the gradient of the mean over all samples.",
    "diag.accumulation.microbatch_sum": "Likely mistake: the gradient is {b} times too large, and {b} is the size of a micro-batch: take the mean of the squared errors over each micro-batch, not their sum.",
    "diag.accumulation.last_microbatch": "Likely mistake: w.grad holds only the gradient of the last micro-batch: .grad was cleared or overwritten between micro-batches. Let the backward calls add up in w.grad.",
    "req.inplace.update_no_grad": "{what}: change {name} in place with gradients off, `with torch.no_grad(): {name} -= lr * {name}.grad` (an optimizer's step() does the same); your code never changed a tensor in place with gradients off. Going through {name}.data or detach() hides the change from autograd, and {name} = ... makes a new tensor instead of updating the one you were given.",
    "diag.inplace.grad_not_cleared": "Likely mistake: w.grad was never cleared, so each step used the sum of the gradients of all steps so far. Clear it after each update: w.grad = None (or w.grad.zero_()).",
    "diag.inplace.ascent": "Likely mistake: w moved up the gradient (w + lr * grad); gradient descent subtracts it: w -= lr * w.grad.",
    "diag.inplace.step_count": "Likely mistake: this is w after {made} step(s), not {steps}: check how many times your loop runs.",
    "diag.inplace.sum_loss": "Likely mistake: each step used the gradient of the sum of the squared errors, {n} times the gradient of their mean: the loss is a mean (.mean()).",
    "diag.inplace.detached_path": "Likely mistake: the gradient misses the part that flows through log(1 + e^x): that part was cut off from the graph (by detach() or torch.no_grad()). Keep it in the graph and avoid the in-place change instead: e = x.exp() + 1, or clone e before changing it.",
    "req.no_grad.predict_no_tensors": "{what}: predict the flags from the rules alone, without building tensors; your code called torch ({ops}). Work it out with plain Python: lists, bools and the rules in the docstring.",
    "req.no_grad.frozen_no_grad": "h: compute the features with gradient recording off, inside `with torch.no_grad():`; none of your operations ran with gradients off.",
    "req.no_grad.frozen_detach": "h: compute the features inside `with torch.no_grad():`, not with detach(); detach() gives the same values here, but this task is about switching recording off.",
    "req.no_grad.frozen_partly": "h: all of h = torch.tanh(x @ W1) belongs inside the no_grad block; part of it was recorded with gradients on ({node}).",
    "diag.no_grad.detach_result": "Likely mistake: {node}: t.detach() always gives a tensor with requires_grad=False, whatever its source.",
    "diag.no_grad.ignored_no_grad": "Likely mistake: {node}: a result computed inside torch.no_grad() never requires grad, even when its inputs do: nothing is recorded there.",
    "diag.no_grad.detach_source": "Likely mistake: {node}: t{source}.detach() made a new tensor and left t{source} as it was; t{source} still requires grad, and so does what is computed from it afterwards.",
    "diag.no_grad.any_input": "Likely mistake: {node}: outside no_grad, a result requires grad as soon as one of its inputs does (here t{source}).",
    "diag.no_grad.no_input": "Likely mistake: {node}: none of its inputs requires grad, so neither does the result; requires_grad spreads only from inputs that have it.",
    "diag.no_grad.loss_under_no_grad": "Likely mistake: out and loss were computed inside the torch.no_grad() block too, so the loss has no graph to backward through. Only h belongs in the block; compute out and loss after it.",
    "diag.no_grad.target_not_cut": "Likely mistake: the gradient also flowed through the target, which was computed from w with gradients on. Cut it off: build it from w.detach(), call .detach() on it, or compute it inside torch.no_grad().",
    "diag.no_grad.detach_unused": "Likely mistake: t.detach() returns a new tensor and leaves t unchanged; your code called detach(), but the target still requires grad. Use the result: target = (...).detach().",
    "diag.no_grad.wrong_side": "Likely mistake: w.grad is the gradient through the target only: the prediction q was cut off instead of the target. Keep q = x @ w in the graph and detach the target.",
    # -- topics higher_order, custom_function
    # gradcheck failures, told entry by entry (compare.Autograd.gradcheck)
    "gradcheck.input_n": "input {n}",
    "gradcheck.other": "{what}: gradcheck failed:\n{detail}",
    "gradcheck.count": "  {input}: {bad} of {total} entries of the Jacobian disagree (gradcheck allows |backward - finite difference| <= {atol:g} + {rtol:g} * |finite difference|)",
    "gradcheck.worst": "  worst entry: d output{output} / d {input}: finite differences of your forward give {expected:.6g}, your backward gives {got:.6g}",
    "diag.gradcheck_grad_output": "Likely mistake: your backward ignores grad_output: it returns the same gradients for grad_output and for 2 * grad_output. Multiply your local derivative by grad_output (chain rule: dL/dx = dL/dy * dy/dx).",
    "diag.gradcheck_mixes": "Likely mistake: the forward is elementwise (each output element depends on its own input element only), but your backward mixes elements: multiply grad_output by the local derivative elementwise (*), without .sum(), @ or another reduction.",
    "diag.gradcheck_swapped": "Likely mistake: the gradient your backward returns for {got} is the one that belongs to {belongs}: backward returns one gradient per input of forward, in forward's order ({order}).",
    "diag.gradcheck_zero": "Likely mistake: your backward returns no gradient for {input} (None or zeros), but the output depends on it: return grad_output times the derivative with respect to {input}.",
    "diag.gradcheck_fraction": "Likely mistake: your backward gives 1/{k} of the derivative, so a constant factor in it is off: check each local derivative in the chain rule.",
    # higher_order: requirements and diagnoses
    "req.higher_order.first_derivative": "first_derivative must compute p'(x) with torch.autograd.grad, which returns the gradient; your code called backward {backward} time(s) and torch.autograd.grad {grad} time(s). (backward stores the gradient in x.grad instead, where gradients add up over calls.)",
    "req.higher_order.derivatives": "derivatives must obtain each derivative from the one before with torch.autograd.grad ({n} call(s) for n={n}), without backward; your code called backward {backward} time(s) and torch.autograd.grad {grad} time(s).",
    "req.higher_order.hvp_two_passes": "hessian_vector_product must compute H @ v with two gradient computations and without building H: the gradient of f with create_graph=True, then the gradient of (gradient * v).sum(); your code made {calls} backward or torch.autograd.grad call(s) (those made inside torch helpers such as torch.autograd.functional.hvp count too).",
    "diag.higher_order.accumulated": "Likely mistake: {what} equals the expected value plus {previous}: x.grad still held {previous} from your earlier backward call, and backward adds to .grad. Use torch.autograd.grad, which returns the gradient without touching x.grad (or set x.grad = None before the next backward).",
    "diag.higher_order.previous_derivative": "derivative {k} of p",
    "diag.higher_order.gradient_of_f": "the gradient of f",
    "diag.higher_order.graph_cut": "Likely mistake: your code passed create_graph=True, but the gradient it differentiated (or returned) has no graph: it was cut off afterwards by .detach(), .data, .item(), .numpy(), torch.tensor(...) or torch.no_grad(). Use the gradient exactly as torch.autograd.grad returns it.",
    "diag.higher_order.create_graph_call": "Likely mistake: your gradient call number {k} (backward or torch.autograd.grad) ran without create_graph=True, so the gradient it returned cannot be differentiated: pass create_graph=True to every call whose result is differentiated again.",
    "diag.higher_order.retain_not_create": "Likely mistake: retain_graph=True keeps the function's graph for another backward, but does not record the backward pass itself, so the gradient it returns cannot be differentiated. Pass create_graph=True instead.",
    "diag.higher_order.new_leaf": "Likely mistake: requires_grad_() on the first gradient makes it a new leaf that is not connected to x, so nothing leads back from it to x. Compute the first gradient with create_graph=True instead.",
    "diag.higher_order.shifted": "Likely mistake: the first item of your list is p(x) itself, so the list starts one step early: its first item must be p'(x), the gradient of p.",
    "diag.higher_order.repeated": "Likely mistake: derivative {k} equals derivative {previous}: you differentiated the same tensor again. Differentiate the derivative you just computed: (current,) = torch.autograd.grad(current.sum(), x, create_graph=True).",
    "diag.higher_order.sum_then_v": "Likely mistake: this is (H @ ones) * v: you differentiated gradient.sum() and multiplied by v afterwards. Multiply by v before differentiating: take the gradient of (gradient * v).sum().",
    "diag.higher_order.no_v": "Likely mistake: this is H @ ones, the derivative of gradient.sum(): v is missing. Take the gradient of (gradient * v).sum().",
    "diag.higher_order.first_gradient": "Likely mistake: this is the gradient of f, not H @ v: differentiate once more, the gradient of (gradient * v).sum(), where the first gradient was taken with create_graph=True.",
    # custom_function: diagnoses
    "diag.custom_function.ignores_grad_output": "Likely mistake: your backward ignores grad_output: it returns the local derivative alone. Multiply your local derivative by grad_output (chain rule: dL/dx = dL/dy * dy/dx).",
    "diag.custom_function.product_rule": "Likely mistake: the product rule is missing a term: d(x * sigmoid(x))/dx = sigmoid(x) + x * sigmoid(x) * (1 - sigmoid(x)), and your backward returns only one of these two terms.",
    "diag.custom_function.gradcheck_requires_grad": "Likely mistake: gradcheck tests the gradients of the inputs that require grad only (and refuses to run when none does): call .requires_grad_() on the new tensor.",
    "diag.custom_function.gradient_count": "Likely mistake: backward must return one gradient per input of forward, as a tuple in forward's order: return dL/dx, dL/dy (a list counts as one value; an input that needs no gradient gets None).",
    "diag.custom_function.sigmoid_only": "Likely mistake: your backward returns the derivative of sigmoid alone, sigmoid(x) * (1 - sigmoid(x)). swish(x) = x * sigmoid(x) is a product: by the product rule its derivative is sigmoid(x) + x * sigmoid(x) * (1 - sigmoid(x)).",
}

LANGUAGES = ("en", "zh")
_catalogue: dict[str, str] = EN
_language = "en"


def catalogue(language: str) -> dict[str, str]:
    """The messages of ``language`` (``LANGUAGES``)."""
    if language == "zh":
        from .messages_zh import ZH

        return ZH
    return EN


def use_language(language: str) -> None:
    """Speak ``language`` from now on (``--grade-lang``)."""
    global _language
    set_language(catalogue(language))
    _language = language


def current_language() -> str:
    return _language


def saved_language():
    """A function that puts back the catalogue in use now (a pytest run
    inside another, as pytester makes, must not change the outer one's)."""
    catalogue, language = _catalogue, _language

    def restore() -> None:
        global _catalogue, _language
        _catalogue, _language = catalogue, language

    return restore


def set_language(catalogue: dict[str, str]) -> None:
    """Use another catalogue; ids it lacks fall back to English."""
    global _catalogue, _language
    _catalogue = {**EN, **catalogue}
    _language = "custom"


def has_message(key: str) -> bool:
    return key in _catalogue


def msg(key: str, **fields: object) -> str:
    return _catalogue[key].format(**fields)
