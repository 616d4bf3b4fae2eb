"""`python -m compiler.cli`: the `envc` command."""

from compiler.cli.app import main

main()
