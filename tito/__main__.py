"""`python -m tito`: the same as the `tito` command."""
from tito.cli import main

main()
