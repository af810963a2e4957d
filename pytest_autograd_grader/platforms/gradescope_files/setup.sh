#!/usr/bin/env bash
# Gradescope runs this once, as root on its Ubuntu image, when it builds the
# autograder (written by `autograd-grader gradescope-bundle`). Running it
# again changes nothing.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
# Ubuntu 23.04 and later refuse system-wide pip installs without this
# (PEP 668); older pip ignores it.
export PIP_BREAK_SYSTEM_PACKAGES=1

apt-get update
apt-get install -y --no-install-recommends python3 python3-pip ca-certificates git
# bubblewrap fences student code off; where the image cannot install (or
# later run) it, the grader uses a uid of its own for student code instead.
apt-get install -y --no-install-recommends bubblewrap || true

# The CPU build, first: the default one brings several GB of CUDA that
# Gradescope has no GPU for, and with torch in place the grader's own
# "torch>=2.1" asks pip for nothing more.
pip3 install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
# The grader itself: requirements.txt names the wheel in this zip's wheels/
# (the grader is not on the package index), or --grader-requirement.
pip3 install --no-cache-dir -r requirements.txt
