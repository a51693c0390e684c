"""`python -m kubesched.cli` runs the `kubesched` command."""

from kubesched.cli import entry

entry()
