"""`python -m compiler.cli`: the `envc` command."""

from compiler.cli import main

main()
